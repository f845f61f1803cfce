// What a selection asks for, through fragments: how many root fields an operation runs (the limits
// count them), and whether a resolver's field selects a given field (a list then loads that relation
// for all of its items at once, and only when the document asks for it).
import { Kind, type FragmentDefinitionNode, type GraphQLResolveInfo, type SelectionSetNode } from 'graphql';

/** The fields a selection set selects (those `counts` names), through inline fragments and fragment spreads. */
export function selectedFieldCount(
  selectionSet: SelectionSetNode,
  fragments: Record<string, FragmentDefinitionNode>,
  counts: (name: string) => boolean = (name) => name !== '__typename',
): number {
  let count = 0;
  for (const selection of selectionSet.selections) {
    if (selection.kind === Kind.FIELD) count += counts(selection.name.value) ? 1 : 0;
    else if (selection.kind === Kind.INLINE_FRAGMENT) count += selectedFieldCount(selection.selectionSet, fragments, counts);
    else if (fragments[selection.name.value]) count += selectedFieldCount(fragments[selection.name.value]!.selectionSet, fragments, counts);
  }
  return count;
}

/** The selection sets of the fields named `name` in `selectionSet`, through fragments. */
function selectionsOf(selectionSet: SelectionSetNode, fragments: Record<string, FragmentDefinitionNode>, name: string): SelectionSetNode[] {
  const found: SelectionSetNode[] = [];
  for (const selection of selectionSet.selections) {
    if (selection.kind === Kind.FIELD) {
      if (selection.name.value === name && selection.selectionSet) found.push(selection.selectionSet);
    } else if (selection.kind === Kind.INLINE_FRAGMENT) found.push(...selectionsOf(selection.selectionSet, fragments, name));
    else if (fragments[selection.name.value]) found.push(...selectionsOf(fragments[selection.name.value]!.selectionSet, fragments, name));
  }
  return found;
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
