// What a selection asks for: the walk the limits count root fields with, and the one that decides
// whether an invitation list or page reads its referrers in its own statement.
import { Kind, parse, type FieldNode, type FragmentDefinitionNode, type OperationDefinitionNode } from 'graphql';
import { expect, test } from 'vitest';
import { connectionSelects } from '../../src/graphql/schema/connection.js';
import { selectedFieldCount, selectsField } from '../../src/graphql/selection.js';

/** The first root field of `document` as a resolver of it sees it. */
function infoOf(document: string) {
  const parsed = parse(document);
  const operation = parsed.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)!;
  const fragments = Object.fromEntries(
    parsed.definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION).map((f) => [f.name.value, f]),
  );
  return { operation, fragments, fieldNodes: [operation.selectionSet.selections[0] as FieldNode] };
}

test.each([
  ['directly', '{ invitations { id referrer { id } } }', true],
  ['through a fragment spread', '{ invitations { id ...Who } } fragment Who on Invitation { referrer { email } }', true],
  ['through an inline fragment', '{ invitations { ... on Invitation { referrer { id } } } }', true],
  ['not at all', '{ invitations { id email } }', false],
  ['only deeper (a referrer of something else)', '{ invitations { id emailDelivery { referrer { id } } } }', false],
])('selectsField: an invitation list asking for referrer %s', (_how, document, expected) => {
  expect(selectsField(infoOf(document), 'referrer')).toBe(expected);
});

test('selectedFieldCount: the root fields through fragments, __typename not counted unless asked', () => {
  const { operation, fragments } = infoOf(
    'mutation { a: revokeInvitation(id: 1) { __typename } ...More __typename } fragment More on Mutation { b: revokeInvitation(id: 2) { __typename } ... on Mutation { c: resendInvitation(id: 3) { __typename } } }',
  );
  expect(selectedFieldCount(operation.selectionSet, fragments)).toBe(3);
  expect(selectedFieldCount(operation.selectionSet, fragments, (name) => name === 'resendInvitation')).toBe(1);
});

test.each([
  ['as nodes', '{ invitationPage { nodes { referrer { id } } } }', true],
  ['as edges { node }', '{ invitationPage { edges { cursor node { id referrer { id } } } } }', true],
  [
    'through fragments at each step',
    '{ invitationPage { ...Page } } fragment Page on InvitationConnection { edges { ... on InvitationEdge { node { ...Who } } } } fragment Who on Invitation { referrer { id } }',
    true,
  ],
  ['not at all', '{ invitationPage { nodes { id } edges { cursor node { email } } totalCount } }', false],
  ['only beside the nodes', '{ invitationPage { referrer { id } pageInfo { hasNextPage } } }', false],
])("connectionSelects: a page asking for its nodes' referrer %s", (_how, document, expected) => {
  expect(connectionSelects(infoOf(document), 'referrer')).toBe(expected);
});
