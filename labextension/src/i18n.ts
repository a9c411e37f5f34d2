/**
 * The translation domain of the extension's strings, and a bundle that only fills in
 * placeholders — for code run without JupyterLab's translator (node tests), which must
 * not import JupyterLab at run time.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

export const DOMAIN = 'prime_kernel';

function format(text: string, args: unknown[]): string {
  return text.replace(/%(\d+)/g, (match, n) => {
    const value = args[Number(n) - 1];
    return value === undefined ? match : String(value);
  });
}

/** English, placeholders filled (`%1` is the count in `_n`, as in JupyterLab's Gettext). */
export const untranslated: TranslationBundle = {
  __: (msgid, ...args) => format(msgid, args),
  _n: (msgid, plural, n, ...args) => format(n === 1 ? msgid : plural, [n, ...args]),
  _p: (_ctx, msgid, ...args) => format(msgid, args),
  _np: (_ctx, msgid, plural, n, ...args) => format(n === 1 ? msgid : plural, [n, ...args]),
  gettext: (msgid, ...args) => format(msgid, args),
  ngettext: (msgid, plural, n, ...args) => format(n === 1 ? msgid : plural, [n, ...args]),
  pgettext: (_ctx, msgid, ...args) => format(msgid, args),
  npgettext: (_ctx, msgid, plural, n, ...args) => format(n === 1 ? msgid : plural, [n, ...args]),
  dcnpgettext: (_domain, _ctx, msgid, plural, n, ...args) =>
    format(plural && n !== 1 ? plural : msgid, plural ? [n, ...args] : args)
};
