/** What lists show of a user beside what they list (an invitation's referrer, an emoji's author). */
export interface UserSummary {
  id: number;
  email: string;
  fullName: string;
  role: number;
  isBot: boolean;
}
