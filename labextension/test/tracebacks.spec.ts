import { TracebackFolder } from '../src/tracebacks';

const error = (evalue: string, frames: string[]) => ({ output_type: 'error', ename: 'ValueError', evalue, traceback: frames });

describe('TracebackFolder', () => {
  it('shows an error whole once, then its last line with a note', () => {
    const folder = new TracebackFolder();
    const first = [{ output_type: 'stream', text: 'hi' }, error('bad', ['frame 1', 'frame 2', 'ValueError: bad'])];
    expect(folder.fold(first, 'folded')).toEqual(first);
    const again = folder.fold([error('bad', ['frame 3', 'frame 4', 'ValueError: bad'])], 'folded');
    expect(again[0].traceback).toEqual(['\u001b[0;31mValueError\u001b[0m: bad', 'folded']);
    expect(again[0].ename).toBe('ValueError');
    // Another error is new: whole.
    const other = error('worse', ['frame', 'ValueError: worse']);
    expect(folder.fold([other], 'folded')).toEqual([other]);
  });
});
