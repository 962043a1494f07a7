// The English `t` the pure functions are tested with: the one setupTests.ts initialised, with the plugin's catalogue.
import i18next from 'i18next';
import { NAMESPACE, type Translate } from '../i18n';

export const t: Translate = i18next.getFixedT('en', NAMESPACE);
