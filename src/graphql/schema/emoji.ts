import { deactivateCustomEmoji, listCustomEmoji } from '../../domain/emoji/custom-emoji.js';
import { builder } from '../builder.js';
import { actorOf } from '../context.js';
import { BadRequestError, NotFoundError, asResult, type ErrorShape } from './errors.js';
import { User } from './user.js';

export interface CustomEmojiShape {
  id: number;
  name: string;
  deactivated: boolean;
  authorId: number | null;
}

export const CustomEmoji = builder.objectRef<CustomEmojiShape>('CustomEmoji').implement({
  fields: (t) => ({
    name: t.exposeString('name'),
    deactivated: t.exposeBoolean('deactivated'),
    author: t.field({
      type: User,
      nullable: true,
      resolve: (emoji, _args, context) => (emoji.authorId === null ? null : context.loaders.userById.load(emoji.authorId)),
    }),
  }),
});

const DeactivateCustomEmojiSuccess = builder.objectRef<{ emoji: CustomEmojiShape }>('DeactivateCustomEmojiSuccess').implement({
  isTypeOf: (value) => 'emoji' in (value as object),
  fields: (t) => ({ emoji: t.field({ type: CustomEmoji, resolve: (r) => r.emoji }) }),
});

export const DeactivateCustomEmojiResult = builder.unionType('DeactivateCustomEmojiResult', {
  types: [DeactivateCustomEmojiSuccess, NotFoundError, BadRequestError],
});
export type DeactivateCustomEmojiResultShape = { emoji: CustomEmojiShape } | ErrorShape;

builder.queryField('customEmoji', (t) =>
  t.field({
    type: [CustomEmoji],
    description: "The organization's custom emoji; deactivated ones only when asked for.",
    args: { includeDeactivated: t.arg.boolean({ defaultValue: false }) },
    resolve: (_root, args, context) =>
      listCustomEmoji(context.app.prisma, actorOf(context), { includeDeactivated: args.includeDeactivated ?? false }),
  }),
);

builder.mutationField('deactivateCustomEmoji', (t) =>
  t.field({
    type: DeactivateCustomEmojiResult,
    description: 'Deactivate a custom emoji by name. Same rules as DELETE /api/v1/realm/emoji/{emoji_name}.',
    args: { emojiName: t.arg.string({ required: true }) },
    resolve: (_root, args, context): Promise<DeactivateCustomEmojiResultShape> =>
      asResult(async () => ({ emoji: await deactivateCustomEmoji(context.app.prisma, actorOf(context), args.emojiName) })),
  }),
);
