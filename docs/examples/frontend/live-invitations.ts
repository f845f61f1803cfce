// A page kept current: the invitation list redrawn whenever someone sends, revokes or accepts one,
// over Server-Sent Events (graphql-sse's client, which sends headers, unlike EventSource). After a
// dropped connection it subscribes again with the last cursor, so no change is missed; if the server
// no longer has the events since then (EVENTS_PRUNED), it loads the list again and starts afresh.
import { createClient } from 'graphql-sse';
import { graphql } from './gql/index.js';
import type { LiveInvitationsSubscription } from './gql/graphql.js';
import { documentIdOf, request, type Connection } from './client.js';

export const InvitationList = graphql(`
  query InvitationList {
    invitations {
      id
      email
    }
  }
`);

export const LiveInvitations = graphql(`
  subscription LiveInvitations($after: String) {
    invitationsChanged(after: $after) {
      cursor
      invitations {
        id
        email
      }
    }
  }
`);

type Invitations = LiveInvitationsSubscription['invitationsChanged']['invitations'];

/** Calls `show` with the list now and after every change until the returned stop is called. */
export function keepInvitationsCurrent(
  connection: Connection,
  show: (invitations: Invitations) => void,
  onError: (error: unknown) => void = () => {},
) {
  const client = createClient({
    url: `${connection.url}/graphql`,
    headers: { authorization: connection.authorization, 'x-graphql-yoga-csrf': '1' },
  });
  const controller = new AbortController();
  let cursor: string | null = null;
  const follow = async () => {
    while (!controller.signal.aborted) {
      if (cursor === null) show((await request(connection, InvitationList, {})).invitations);
      // The document is named by its hash (the server's manifest holds its text).
      const changes = client.iterate<LiveInvitationsSubscription>({
        documentId: documentIdOf(LiveInvitations),
        variables: { after: cursor },
      } as never);
      controller.signal.addEventListener('abort', () => void changes.return?.(), { once: true });
      for await (const { data, errors } of changes) {
        if (errors?.some((error) => error.extensions?.code === 'EVENTS_PRUNED')) cursor = null;
        if (!data) break;
        cursor = data.invitationsChanged.cursor;
        show(data.invitationsChanged.invitations);
      }
    }
  };
  void follow().catch(onError);
  return () => {
    controller.abort();
    client.dispose();
  };
}
