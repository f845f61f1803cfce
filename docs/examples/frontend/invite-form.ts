// An invitation form that marks bad addresses as they are typed (previewInvitations: the whole check
// order of sendInvitations, nothing written or sent), then sends what the preview accepted.
import { graphql } from './gql/index.js';
import type { SendInvitationsInput } from './gql/graphql.js';
import { request, type Connection } from './client.js';

export const PreviewInvitations = graphql(`
  query PreviewInvitations($input: SendInvitationsInput!) {
    previewInvitations(input: $input) {
      __typename
      ... on InvitationPreview {
        wouldInvite
        addresses {
          email
          willInvite
          reason
          deactivated
        }
      }
      ... on Error {
        message
        code
      }
      ... on InvitationFailedError {
        errors {
          email
          reason
        }
      }
    }
  }
`);

export const SendInvitations = graphql(`
  mutation SendInvitations($input: SendInvitationsInput!) {
    sendInvitations(input: $input) {
      __typename
      ... on SendInvitationsSuccess {
        invitations {
          id
          email
        }
      }
      ... on Error {
        message
        code
      }
    }
  }
`);

/** What the form shows while the administrator types: one verdict per address, or why nothing would go. */
export async function checkForm(connection: Connection, input: SendInvitationsInput) {
  const { previewInvitations } = await request(connection, PreviewInvitations, { input });
  return previewInvitations;
}

/** On submit: the addresses the preview accepted, sent. A change in between is caught by the send's own checks. */
export async function submitForm(connection: Connection, input: SendInvitationsInput) {
  const preview = await checkForm(connection, input);
  if (preview.__typename !== 'InvitationPreview') return preview;
  const accepted = preview.addresses.filter((address) => address.willInvite).map((address) => address.email);
  const { sendInvitations } = await request(connection, SendInvitations, { input: { ...input, inviteeEmails: accepted } });
  return sendInvitations;
}
