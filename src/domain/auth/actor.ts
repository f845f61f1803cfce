// Who makes a request: the authenticated user as every service and door sees it.
export interface Actor {
  id: number;
  organizationId: number;
  email: string;
  fullName: string;
  role: number;
  isBot: boolean;
  botType: number | null;
  dateJoined: Date;
}
