// GET /server_settings (no credentials): what clients read before logging in, to learn which
// feature level's behaviour the server implements (Decision 6) and how to authenticate.
import { successResponse } from '../envelope.js';
import type { PublicRestHandler } from '../request.js';

/** The newest feature level whose behaviour this server implements (seed section 9: 472). */
export const ZULIP_FEATURE_LEVEL = 472;
export const ZULIP_VERSION = '12.0';

/** Requests carry no organization (no subdomains here), so the realm fields describe the server. */
export const serverSettings: PublicRestHandler = async ({ app, clientAddress, rateLimits }) => {
  await app.rateLimiter.hitUnauthenticated(clientAddress, rateLimits);
  return successResponse({
    // E-mail address and password (fetch_api_key and the sign-in form); no other login method.
    authentication_methods: {
      password: true,
      dev: false,
      email: true,
      ldap: false,
      remoteuser: false,
      github: false,
      azuread: false,
      gitlab: false,
      apple: false,
      google: false,
      saml: false,
      'openid connect': false,
    },
    external_authentication_methods: [],
    zulip_feature_level: ZULIP_FEATURE_LEVEL,
    zulip_version: ZULIP_VERSION,
    zulip_merge_base: ZULIP_VERSION,
    push_notifications_enabled: false,
    is_incompatible: false,
    email_auth_enabled: true,
    require_email_format_usernames: true,
    realm_url: app.config.serverUrl,
    realm_uri: app.config.serverUrl,
  });
};
