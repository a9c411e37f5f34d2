/**
 * The tokens' interfaces against the classes that provide them. Each class `implements` its
 * interface (the compiler checks that in src/); here, the other way round: every public member
 * of the class is in the interface, so whatever the providing plugin offers, another extension
 * reaches through the token — as it did when a token's type was the class itself. The checks
 * are types, so jest fails this file when it does not compile (ts-jest reports type errors).
 */
import type { PrimeAPI } from '../src/api';
import type { HarnessModel } from '../src/harnessModel';
import type { EventRendererRegistry } from '../src/renderers';
import type { SessionView } from '../src/session';
import type { SessionModel } from '../src/sessionModel';
import type { SessionsModel } from '../src/sessionsModel';
import type { PrimeSettings } from '../src/settings';
import type {
  IPrimeAPI,
  IPrimeEventRenderers,
  IPrimeHarness,
  IPrimeSessions,
  IPrimeSettings,
  ISessionModel,
  ISessionView
} from '../src/tokens';

/** The public members of `C` that its interface `I` leaves out (`never` when none). */
type Missing<C, I> = Exclude<keyof C, keyof I>;

/** Compiles only when `T` is `never`; the error names what is missing. */
function none<T extends never>(): T[] {
  return [];
}

describe('the tokens', () => {
  it('declare every public member of the classes that provide them', () => {
    const missing = [
      ...none<Missing<PrimeAPI, IPrimeAPI>>(),
      ...none<Missing<SessionsModel, IPrimeSessions>>(),
      // `connect` is how the settings plugin feeds the registry in, not part of the contract.
      ...none<Exclude<Missing<PrimeSettings, IPrimeSettings>, 'connect'>>(),
      ...none<Missing<EventRendererRegistry, IPrimeEventRenderers>>(),
      ...none<Missing<HarnessModel, IPrimeHarness>>(),
      ...none<Missing<SessionModel, ISessionModel>>(),
      ...none<Missing<SessionView, ISessionView>>()
    ];
    expect(missing).toEqual([]);
  });
});
