// GraphQL documents more than one test file sends.
import { graphql } from '../generated/gql.js';

/** Every field of the refusal of some addresses (sendInvitations and previewInvitations alike); the documents below spread it by name. @public */
export const InvitationRefusalFields = graphql(`
  fragment InvitationRefusalFields on InvitationFailedError {
    errors {
      email
      reason
      deactivated
    }
    sentInvitations
    dailyLimitReached
    licenseLimitReached
  }
`);

/** previewInvitations with every field of each verdict and refusal. */
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
      ...InvitationRefusalFields
    }
  }
`);
