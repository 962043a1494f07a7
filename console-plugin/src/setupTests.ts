// Jest: Testing Library's matchers, and i18next set up as the console sets it up, with the plugin's English
// catalogue (locales/en/plugin__numo-console-plugin.json): components render their English words, and a test fails
// when a word it renders has no entry in the catalogue (run `npm run i18n`).
import '@testing-library/jest-dom';
import i18next from 'i18next';
import { initReactI18next } from 'react-i18next';
import english from '../locales/en/plugin__numo-console-plugin.json';
import { englishOnly } from './i18n';

const missing: string[] = [];

void i18next.use(initReactI18next).init({
  ...englishOnly(english),
  saveMissing: true,
  missingKeyHandler: (_languages, namespace, key) => {
    missing.push(`${namespace}~${key}`);
  },
});

afterEach(() => {
  const keys = missing.splice(0);
  if (keys.length) {
    throw new Error(`words without an entry in locales/en (run \`npm run i18n\`): ${[...new Set(keys)].join(', ')}`);
  }
});
