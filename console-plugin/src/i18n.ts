// The plugin's words go through the console's i18next, as every console plugin's do: react-i18next's
// `useTranslation('plugin__numo-console-plugin')` in components, and a `t` handed to the pure functions that word
// things (hold reasons, action texts, the timeline's labels and titles). The console loads
// `locales/<language>/plugin__numo-console-plugin.json` from the plugin's base URL (numo serves the build's
// dist/locales/) and falls back to English. Keys are the English text; `npm run i18n` writes
// locales/en/plugin__numo-console-plugin.json from the sources and `npm run i18n:check` fails when it is stale.

/** The plugin's i18next namespace: `plugin__` and the plugin's name, as the console expects it. */
export const NAMESPACE = 'plugin__numo-console-plugin';

/** A translation function, as `useTranslation(NAMESPACE)` gives it: English keys, `{{name}}` interpolated. */
export type Translate = (key: string, options?: Record<string, unknown>) => string;

/** The i18next options the console itself uses for plugin namespaces (frontend/public/i18n.js): keys are English
 * sentences, so neither `:` nor `.` separates anything; React escapes what is rendered. */
export const CONSOLE_I18N_OPTIONS = {
  nsSeparator: '~',
  keySeparator: false,
  contextSeparator: '~',
  interpolation: { escapeValue: false },
} as const;

/** i18next set up as the console sets up plugin namespaces, where the console does not load the catalogue (the jest
 * setup): English only, from `catalogue`, loaded at once. The catalogue is a parameter, so that
 * the plugin's own bundle never carries it (the console loads it from numo). */
export function englishOnly(catalogue: Record<string, string>) {
  return {
    ...CONSOLE_I18N_OPTIONS,
    lng: 'en',
    fallbackLng: 'en',
    ns: [NAMESPACE],
    defaultNS: NAMESPACE,
    resources: { en: { [NAMESPACE]: catalogue } },
    initAsync: false,
    showSupportNotice: false,
    react: { useSuspense: false },
  };
}
