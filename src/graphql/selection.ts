// What a resolver's field asks for, read from its selection: lets a list load a relation for all of
// its items at once, and only when the document asks for it.
import { Kind, type GraphQLResolveInfo, type SelectionSetNode } from 'graphql';

/**
 * Whether the field being resolved selects `name` among its own fields, directly or through
 * fragments. @skip and @include are not evaluated: at worst the answer is a yes that loads more.
 */
export function selectsField(info: Pick<GraphQLResolveInfo, 'fieldNodes' | 'fragments'>, name: string): boolean {
  const within = (set: SelectionSetNode | undefined): boolean =>
    set?.selections.some((selection) => {
      if (selection.kind === Kind.FIELD) return selection.name.value === name;
      if (selection.kind === Kind.INLINE_FRAGMENT) return within(selection.selectionSet);
      return within(info.fragments[selection.name.value]?.selectionSet);
    }) ?? false;
  return info.fieldNodes.some((node) => within(node.selectionSet));
}
