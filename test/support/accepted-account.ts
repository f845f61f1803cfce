// The GraphQL read-back of a newly accepted account, shared by the acceptance tests.
import { graphql } from '../generated/gql.js';

export const AcceptedMe = graphql(`
  query AcceptedMe {
    me {
      email
      fullName
      role
      subscriptions {
        name
      }
      groups {
        name
      }
    }
  }
`);
