// `npm run i18n` (i18next-parser): writes locales/en/plugin__numo-console-plugin.json, sorted, from every `t('…')` of
// the sources and every `%plugin__numo-console-plugin~…%` of console-extensions.json. Keys are the English text and
// so are their English values; a plural (a `count`) takes its `_one` text from the call's `defaultValue_one`.
// `npm run i18n:check` (in `make test`) fails when the committed catalogue is not what this writes.
import { ExtensionsLexer } from './i18n-scripts/extensions-lexer.mjs';

export default {
  input: [
    'src/**/*.{ts,tsx}',
    '!src/**/*.test.{ts,tsx}',
    '!src/__fixtures__/**',
    '!src/__mocks__/**',
    'console-extensions.json',
  ],
  output: 'locales/$LOCALE/$NAMESPACE.json',
  locales: ['en'],
  defaultNamespace: 'plugin__numo-console-plugin',
  // The console's own separators: English sentences hold `:` and `.`.
  namespaceSeparator: '~',
  keySeparator: false,
  contextSeparator: '~',
  defaultValue: (_locale, _namespace, key, value) => value || key,
  sort: true,
  createOldCatalogs: false,
  keepRemoved: false,
  indentation: 2,
  lineEnding: 'lf',
  lexers: {
    ts: ['JavascriptLexer'],
    tsx: ['JsxLexer'],
    json: [ExtensionsLexer],
    default: ['JavascriptLexer'],
  },
};
