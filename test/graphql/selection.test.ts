// What a selection asks for: the walk the limits count root fields with, and the one that decides
// whether an invitation list preloads its referrers; and the loader whose preloaded values are
// handed out as values (no promise per list item).
import DataLoader from 'dataloader';
import { Kind, parse, type FieldNode, type FragmentDefinitionNode, type OperationDefinitionNode } from 'graphql';
import { expect, test } from 'vitest';
import { PreloadingLoader } from '../../src/graphql/loaders.js';
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
  const { operation, fragments } = infoOf('mutation { a: revokeInvitation(id: 1) { __typename } ...More __typename } fragment More on Mutation { b: revokeInvitation(id: 2) { __typename } ... on Mutation { c: resendInvitation(id: 3) { __typename } } }');
  expect(selectedFieldCount(operation.selectionSet, fragments)).toBe(3);
  expect(selectedFieldCount(operation.selectionSet, fragments, (name) => name === 'resendInvitation')).toBe(1);
});

test('PreloadingLoader: the preloaded keys join the pending batch, then come back as values; other keys still load through the batch', async () => {
  const batches: number[][] = [];
  const loader = new PreloadingLoader(
    new DataLoader<number, string>(async (keys) => {
      batches.push([...keys]);
      return keys.map((key) => `user ${key}`);
    }),
  );
  expect(loader.load(1)).toBeInstanceOf(Promise);
  await loader.preload([2, 3, 2, 3]);
  expect(loader.load(2)).toBe('user 2');
  expect(loader.load(3)).toBe('user 3');
  expect(await loader.load(4)).toBe('user 4');
  expect(batches).toEqual([[1, 2, 3], [4]]);
});
