// i18next-parser lexer for console-extensions.json: the console translates an extension's string property written
// as `%<namespace>~<English text>%` (a navigation item's name, a tab's name, a details item's title) through the
// plugin's namespace, so those texts belong in the catalogue too.
import { EventEmitter } from 'node:events';

const TRANSLATED = /^%(.+~.+)%$/;

/** Every string value of `value` (objects and arrays walked), depth first. */
function* strings(value) {
  if (typeof value === 'string') {
    yield value;
  } else if (value && typeof value === 'object') {
    for (const child of Object.values(value)) yield* strings(child);
  }
}

export class ExtensionsLexer extends EventEmitter {
  extract(content, filename) {
    let parsed;
    try {
      parsed = JSON.parse(content);
    } catch (e) {
      this.emit('warning', `${filename} is not JSON: ${e.message}`);
      return [];
    }
    return [...strings(parsed)].flatMap((s) => {
      const match = TRANSLATED.exec(s);
      return match ? [{ key: match[1] }] : [];
    });
  }
}
