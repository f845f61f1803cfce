// Every GraphQL type registers itself with the builder on import; this file assembles the schema.
import { builder } from '../builder.js';
import './scalars.js';
import './errors.js';
import './user.js';
import './channel.js';
import './attachment.js';
import './emoji.js';
import './uploads.js';
import './invitation.js';
import './invitation-management.js';
import './direct-message.js';
import './live-updates.js';
import './node.js';
import './rate-limit.js';

export const schema = builder.toSchema({ sortSchema: false });
