import { addCustomEmoji } from '../../domain/emoji/add-custom-emoji.js';
import {
  deactivateCustomEmoji,
  emojiSourceUrl,
  emojiStillUrl,
  listCustomEmoji,
  type CustomEmojiRecord,
} from '../../domain/emoji/custom-emoji.js';
import { builder } from '../builder.js';
import { actorOf } from '../context.js';
import { BadRequestError, NotFoundError, asResult, type ErrorShape } from './errors.js';
import { User } from './user.js';
import { incomingFile } from './uploads.js';

export const CustomEmoji = builder.objectRef<CustomEmojiRecord>('CustomEmoji').implement({
  fields: (t) => ({
    name: t.exposeString('name'),
    deactivated: t.exposeBoolean('deactivated'),
    author: t.field({
      type: User,
      nullable: true,
      resolve: (emoji, _args, context) => (emoji.authorId === null ? null : context.loaders.userById.load(emoji.authorId)),
    }),
    id: t.exposeInt('id'),
    sourceUrl: t.string({ description: 'Where the (64x64) image is served.', resolve: emojiSourceUrl }),
    stillUrl: t.string({ nullable: true, description: 'A still image for animated emoji; null otherwise.', resolve: emojiStillUrl }),
  }),
});

const DeactivateCustomEmojiSuccess = builder.objectRef<{ emoji: CustomEmojiRecord }>('DeactivateCustomEmojiSuccess').implement({
  isTypeOf: (value) => 'emoji' in (value as object),
  fields: (t) => ({ emoji: t.field({ type: CustomEmoji, resolve: (r) => r.emoji }) }),
});

export const DeactivateCustomEmojiResult = builder.unionType('DeactivateCustomEmojiResult', {
  types: [DeactivateCustomEmojiSuccess, NotFoundError, BadRequestError],
});
export type DeactivateCustomEmojiResultShape = { emoji: CustomEmojiRecord } | ErrorShape;

builder.queryField('customEmoji', (t) =>
  t.field({
    type: [CustomEmoji],
    description: "The organization's custom emoji; deactivated ones only when asked for.",
    args: { includeDeactivated: t.arg.boolean({ defaultValue: false }) },
    resolve: (_root, args, context) =>
      listCustomEmoji(context.app, actorOf(context), { includeDeactivated: args.includeDeactivated ?? false }),
  }),
);

builder.mutationField('deactivateCustomEmoji', (t) =>
  t.field({
    type: DeactivateCustomEmojiResult,
    description: 'Deactivate a custom emoji by name. Same rules as DELETE /api/v1/realm/emoji/{emoji_name}.',
    args: { emojiName: t.arg.string({ required: true }) },
    resolve: (_root, args, context): Promise<DeactivateCustomEmojiResultShape> =>
      asResult(async () => ({ emoji: await deactivateCustomEmoji(context.app, actorOf(context), args.emojiName) })),
  }),
);

const AddCustomEmojiSuccess = builder.objectRef<{ emoji: CustomEmojiRecord; added: true }>('AddCustomEmojiSuccess').implement({
  isTypeOf: (value) => 'added' in (value as object),
  fields: (t) => ({ emoji: t.field({ type: CustomEmoji, resolve: (r) => r.emoji }) }),
});

const AddCustomEmojiResult = builder.unionType('AddCustomEmojiResult', { types: [AddCustomEmojiSuccess, BadRequestError] });

builder.mutationField('addCustomEmoji', (t) =>
  t.field({
    type: AddCustomEmojiResult,
    description: 'Add a custom emoji. Same rules, limits and messages as POST /api/v1/realm/emoji/{emoji_name}.',
    args: { name: t.arg.string({ required: true }), file: t.arg({ type: 'File', required: true }) },
    resolve: (_root, args, context): Promise<{ emoji: CustomEmojiRecord; added: true } | ErrorShape> =>
      asResult(async () => ({
        emoji: await addCustomEmoji(context.app, actorOf(context), { name: args.name, file: incomingFile(args.file) }),
        added: true as const,
      })),
  }),
);
