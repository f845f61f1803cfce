// POST /register, GET and DELETE /events (docs/reference/events.md sections 1-3): the reference's
// parameters and answers over the event queues of src/domain/events.
import type { JsonCheck } from '../params.js';
import {
  json,
  jsonBool,
  jsonInt,
  jsonList,
  jsonNullable,
  jsonSafeInt,
  optional,
  parseParams,
  required,
  requiredPlainly,
  text,
} from '../params.js';
import { heldCredentials } from '../../domain/auth/held-credentials.js';
import { DomainError } from '../../domain/errors.js';
import { queueLifespan, registerQueue } from '../../domain/events/queues.js';
import { successResponse } from '../envelope.js';
import type { RestHandler, RestRequest } from '../request.js';
import { ZULIP_FEATURE_LEVEL, ZULIP_VERSION } from './server-settings.js';

const jsonString: JsonCheck<string> = (value, at) => {
  if (typeof value !== 'string') throw new DomainError(`${at} is not a string`);
  return value;
};
const jsonDict: JsonCheck<object> = (value, at) => {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new DomainError(`${at} is not a dict`);
  return value;
};
const anyJson: JsonCheck<unknown> = (value) => value;

const REGISTER_PARAMS = {
  event_types: optional(json(jsonNullable(jsonList(jsonString)))),
  fetch_event_types: optional(json(jsonNullable(jsonList(jsonString)))),
  queue_lifespan_secs: optional(json(jsonInt)),
  // Accepted and validated, with no effect here (they concern messages).
  narrow: optional(json(jsonList(anyJson))),
  apply_markdown: optional(json(jsonBool)),
  client_gravatar: optional(json(jsonBool)),
  all_public_streams: optional(json(jsonBool)),
  include_subscribers: optional(json(anyJson)),
  slim_presence: optional(json(jsonBool)),
  client_capabilities: optional(json(jsonDict)),
};

export const register: RestHandler = async ({ actor, params, app }) => {
  const { values, ignored } = parseParams(params, REGISTER_PARAMS);
  const eventTypes = values.event_types ?? null;
  const fetchEventTypes = values.fetch_event_types === undefined ? eventTypes : values.fetch_event_types;
  const registration = await registerQueue(app, actor, {
    eventTypes,
    fetchEventTypes,
    lifespanSecs: queueLifespan(values.queue_lifespan_secs ?? 0),
  });
  const state: Record<string, unknown> = {};
  if (registration.realmEmoji) state.realm_emoji = registration.realmEmoji;
  if (registration.longpollTimeoutSeconds) state.event_queue_longpoll_timeout_seconds = registration.longpollTimeoutSeconds;
  return successResponse(
    {
      queue_id: registration.queueId,
      last_event_id: registration.lastEventId,
      zulip_version: ZULIP_VERSION,
      zulip_feature_level: ZULIP_FEATURE_LEVEL,
      zulip_merge_base: ZULIP_VERSION,
      ...state,
    },
    ignored,
  );
};

// Section 2: a missing queue_id or last_event_id is a plain BAD_REQUEST (DELETE's queue_id is not).
const POLL_PARAMS = {
  queue_id: requiredPlainly(text()),
  last_event_id: requiredPlainly(json(jsonSafeInt)),
  dont_block: optional(json(jsonBool)),
};

/** The waiting request re-reads its credentials when the authentication cache says they changed. */
function credentialsOf({ request, app, credentials }: RestRequest) {
  return { ...heldCredentials(app, credentials), signal: request.signal };
}

export const getEvents: RestHandler = async (rest) => {
  const { values } = parseParams(rest.params, POLL_PARAMS);
  const answer = await rest.app.eventPolls.poll(
    rest.actor,
    { queueId: values.queue_id, lastEventId: values.last_event_id, dontBlock: values.dont_block ?? false },
    credentialsOf(rest),
  );
  return successResponse(answer.queueId === undefined ? { events: answer.events } : { events: answer.events, queue_id: answer.queueId });
};

export const deleteEvents: RestHandler = async ({ actor, params, app }) => {
  const { values } = parseParams(params, { queue_id: required(text()) });
  await app.eventPolls.delete(actor, values.queue_id);
  return successResponse();
};
