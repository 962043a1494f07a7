// ESLint (flat config), run by `npm run lint` with `--max-warnings 0`, as the console's plugins lint: ESLint's and
// typescript-eslint's recommended rules, React's and React hooks' rules, Prettier as a rule, and no untranslated
// text in the plugin's JSX (eslint-plugin-i18next's no-literal-string: every word a user reads goes through `t`).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import react from 'eslint-plugin-react';
import reactHooks from 'eslint-plugin-react-hooks';
import i18next from 'eslint-plugin-i18next';
import prettier from 'eslint-plugin-prettier/recommended';
import globals from 'globals';

/** The JSX attributes whose text a user reads or hears (labels, titles, tooltips, screen-reader text). */
const READ_ATTRIBUTES = [
  'aria-label',
  'aria-valuetext',
  'alt',
  'categoryName',
  'content',
  'dataLabel',
  'description',
  'label',
  'placeholder',
  'screenReaderText',
  'text',
  'title',
  'titleText',
  'valueText',
];

export default tseslint.config(
  { ignores: ['dist/', 'e2e/shell/dist/', 'node_modules/'] },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    files: ['**/*.{ts,tsx}'],
    plugins: { react, 'react-hooks': reactHooks },
    settings: { react: { version: 'detect' } },
    languageOptions: {
      globals: globals.browser,
      parserOptions: { ecmaFeatures: { jsx: true } },
    },
    rules: {
      ...react.configs.recommended.rules,
      ...react.configs['jsx-runtime'].rules,
      'react-hooks/rules-of-hooks': 'error',
      'react-hooks/exhaustive-deps': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // Types say what the props are.
      'react/prop-types': 'off',
    },
  },
  {
    // The plugin itself: React hooks' full rules (the React Compiler's among them).
    files: ['src/**/*.{ts,tsx}'],
    rules: reactHooks.configs.recommended.rules,
  },
  {
    // The plugin's components: every word in JSX goes through `t` (text, and the attributes a user reads).
    files: ['src/**/*.tsx'],
    ignores: ['src/**/*.test.tsx'],
    plugins: { i18next },
    rules: {
      'i18next/no-literal-string': [
        'error',
        {
          mode: 'jsx-only',
          'should-validate-template': true,
          'jsx-attributes': { include: READ_ATTRIBUTES },
          // Punctuation and numbers alone, as the default, and the typographic dashes, ellipsis and middle dot.
          words: { exclude: ['[0-9!-/:-@[-`{-~\\s—–…·]+'] },
        },
      ],
    },
  },
  {
    files: ['**/*.{js,mjs,cjs}'],
    languageOptions: { globals: { ...globals.node } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // The end-to-end scripts run functions in the page (puppeteer's evaluate).
    files: ['e2e/**/*.mjs'],
    languageOptions: { globals: { ...globals.node, ...globals.browser } },
  },
  {
    files: ['src/**/*.test.{ts,tsx}', 'src/setupTests.ts', 'src/__fixtures__/**'],
    languageOptions: { globals: { ...globals.jest, ...globals.node } },
  },
  prettier,
);
