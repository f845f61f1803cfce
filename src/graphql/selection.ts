// What a selection asks for, through fragments: how many root fields an operation runs (the limits
// count them), and whether a resolver's field selects a given field (a list then loads that relation
// for all of its items at once, and only when the document asks for it).
import { Kind, type FieldNode, type FragmentDefinitionNode, type GraphQLResolveInfo, type SelectionSetNode } from 'graphql';

/** The fields of a selection set, through inline fragments and fragment spreads. */
function* fieldsOf(selectionSet: SelectionSetNode, fragments: Record<string, FragmentDefinitionNode>): Generator<FieldNode> {
  for (const selection of selectionSet.selections) {
    if (selection.kind === Kind.FIELD) yield selection;
    else if (selection.kind === Kind.INLINE_FRAGMENT) yield* fieldsOf(selection.selectionSet, fragments);
    else if (fragments[selection.name.value]) yield* fieldsOf(fragments[selection.name.value]!.selectionSet, fragments);
  }
}

/** The fields a selection set selects (those `counts` names), through fragments. */
export function selectedFieldCount(
  selectionSet: SelectionSetNode,
  fragments: Record<string, FragmentDefinitionNode>,
  counts: (name: string) => boolean = (name) => name !== '__typename',
): number {
  let count = 0;
  for (const field of fieldsOf(selectionSet, fragments)) if (counts(field.name.value)) count++;
  return count;
}

/** The selection sets of the fields named `name` in `selectionSet`, through fragments. */
function selectionsOf(selectionSet: SelectionSetNode, fragments: Record<string, FragmentDefinitionNode>, name: string): SelectionSetNode[] {
  return [...fieldsOf(selectionSet, fragments)].flatMap((field) =>
    field.name.value === name && field.selectionSet ? [field.selectionSet] : [],
  );
}

/**
 * Whether the field being resolved selects `name` among its own fields (or, with `path`, among the
 * fields of its field path[0], of that one's path[1], ...), directly or through fragments. @skip and
 * @include are not evaluated: at worst the answer is a yes that loads more.
 */
export function selectsField(info: Pick<GraphQLResolveInfo, 'fieldNodes' | 'fragments'>, name: string, path: string[] = []): boolean {
  let sets = info.fieldNodes.flatMap((node) => (node.selectionSet ? [node.selectionSet] : []));
  for (const step of path) sets = sets.flatMap((set) => selectionsOf(set, info.fragments, step));
  return sets.some((set) => selectedFieldCount(set, info.fragments, (field) => field === name) > 0);
}
