// GET /users/me in Zulip's shape, from the authenticated actor.
import { isAdministrator, isGuest, isOwner } from '../../domain/users/roles.js';
import { successResponse } from '../envelope.js';
import type { RestHandler } from '../request.js';

export const getOwnUser: RestHandler = async ({ actor }) =>
  successResponse({
    avatar_url: null,
    avatar_version: 1,
    // No restricted e-mail visibility here: the API e-mail is the delivery address.
    email: actor.email,
    delivery_email: actor.email,
    full_name: actor.fullName,
    user_id: actor.id,
    role: actor.role,
    is_owner: isOwner(actor.role),
    is_admin: isAdministrator(actor.role),
    is_guest: isGuest(actor.role),
    is_billing_admin: false,
    is_bot: actor.isBot,
    // Zulip adds the bot fields for bots only; owners are not recorded here.
    ...(actor.isBot ? { bot_type: actor.botType, bot_owner_id: null } : {}),
    is_active: true,
    timezone: '',
    date_joined: actor.dateJoined.toISOString(),
    profile_data: {},
  });
