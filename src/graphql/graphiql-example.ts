// What the GraphiQL page (graphiql-page.ts renders it, src/http/app.ts serves it) opens with: the
// document in its editor, its title, and the credentials and headers its requests carry.

/** The document GraphiQL opens on: this API's own, run as whoever is signed in. */
export const GRAPHIQL_EXAMPLE = `# The team chat administration API. Signed in (see the bar above), these run as you:
# put the cursor in one and press Ctrl-Enter. A program sends
# Authorization: Basic base64(email:api_key) instead (the Headers tab below).

query Overview {
  me { email fullName role }
  attachments { uploadSpaceUsed attachments { name size createTime } }
  invitableChannels { id name isDefault }
}

subscription EmojiChanges {
  customEmojiChanged { change emoji { name deactivated author { email } } }
}
`;

export const GRAPHIQL_OPTIONS = {
  title: 'Team chat administration API',
  defaultQuery: GRAPHIQL_EXAMPLE,
  // A signed-in browser's cookie goes with every request (fetch and Server-Sent Events alike), and
  // Yoga's CSRF header with every one the page sends.
  credentials: 'same-origin',
  additionalHeaders: { 'x-graphql-yoga-csrf': 'graphiql' },
  // Empty, but open: where a program's Authorization header would go.
  defaultEditorToolsVisibility: 'headers',
  shouldPersistHeaders: true,
};
