import { exportBaseName, exportChoices, exportedNotebook, exportPath, slug } from '../src/exportNaming';
import { S } from './fixtures';

describe('export paths', () => {
  it('names the export after the session name, else its id', () => {
    expect(exportBaseName(S('abc123', { name: 'Fix the CSV loader!' }))).toBe('fix-the-csv-loader');
    expect(exportBaseName(S('abc123', { name: '???' }))).toBe('abc123');
    expect(exportBaseName(S('abc123'))).toBe('abc123');
    expect(slug('x'.repeat(30) + ' ' + 'y'.repeat(30))).toBe('x'.repeat(30) + '-' + 'y'.repeat(9));
  });
  it('tries <base>.ipynb, then numbered ones; a subtree is a folder', () => {
    expect(exportPath('report', false, 0)).toBe('report.ipynb');
    expect(exportPath('report', false, 2)).toBe('report-2.ipynb');
    expect(exportPath('report', true, 0)).toBe('report');
    expect(exportPath('report', true, 1)).toBe('report-1');
  });
  it("opens the session's own notebook of a subtree folder", () => {
    const folder = { session_id: 'r1', path: 'report', files: ['report/c1.ipynb', 'report/r1.ipynb'] };
    expect(exportedNotebook(folder, 'r1')).toBe('report/r1.ipynb');
    const single = { session_id: 'r1', path: 'report.ipynb', files: ['report.ipynb'] };
    expect(exportedNotebook(single, 'r1')).toBe('report.ipynb');
    expect(exportedNotebook({ session_id: 'r1', path: 'r1.ipynb', files: ['r1.ipynb'] }, 'r1')).toBe('r1.ipynb');
  });
  it('offers sub-agents when the session has children and context when it was given one', () => {
    const root = S('r', { context_type: 'DataFrame' });
    const child = S('c', { parent_id: 'r' });
    expect(exportChoices(root, [root, child])).toEqual({ subtree: true, withContext: true });
    expect(exportChoices(child, [root, child])).toEqual({ subtree: false, withContext: false });
    expect(exportChoices(S('x', { context_type: null }), [])).toEqual({ subtree: false, withContext: false });
  });
});
