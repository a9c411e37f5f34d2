import { ISession, sessionLabel } from '../src/model';

describe('sessionLabel', () => {
  const base: ISession = { id: 's1', state: 'RUNNING' };
  it('prefers the name', () => {
    expect(sessionLabel({ ...base, name: ' root ', prompt: 'x' })).toBe('root');
  });
  it('falls back to the first words of the prompt', () => {
    expect(
      sessionLabel({ ...base, prompt: 'one two  three four five six seven eight nine ten' })
    ).toBe('one two three four five six seven eight…');
  });
  it('falls back to the id', () => {
    expect(sessionLabel(base)).toBe('s1');
  });
});
