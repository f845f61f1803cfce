// Organization-level roles (the reference's integer codes).
export const ROLE = {
  OWNER: 100,
  ADMINISTRATOR: 200,
  MODERATOR: 300,
  MEMBER: 400,
  GUEST: 600,
} as const;

export type RoleCode = (typeof ROLE)[keyof typeof ROLE];
export const ROLE_CODES: readonly RoleCode[] = Object.values(ROLE);

/** "Admin" in permission checks means owner or administrator. */
export const isAdministrator = (role: number) => role === ROLE.OWNER || role === ROLE.ADMINISTRATOR;
export const isOwner = (role: number) => role === ROLE.OWNER;
export const isGuest = (role: number) => role === ROLE.GUEST;
