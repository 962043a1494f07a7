import { readRecord, recordName, sha256Hex } from './record';
import { record } from './__fixtures__';

describe('the rollout record', () => {
  it('reads its nodes in the order they were done, with their step times', () => {
    const r = readRecord(record().data);
    expect(r.rollout).toBe('4.16.5');
    expect(r.nodes.map((n) => [n.name, n.phase])).toEqual([
      ['worker-0', 'Done'],
      ['worker-1', 'Done'],
    ]);
    expect(r.nodes[0].times).toEqual([
      Date.parse('2026-11-25T08:00:00Z'),
      Date.parse('2026-11-25T08:01:00Z'),
      Date.parse('2026-11-25T08:01:30Z'),
      Date.parse('2026-11-25T08:16:30Z'),
      undefined,
      Date.parse('2026-11-25T08:17:30Z'),
    ]);
  });

  it('ignores anything else, as numo does', () => {
    expect(readRecord({ 'node.x': 'Bogus 1', other: '1', 'hold.s1': 'x 2 A b' })).toEqual({
      rollout: undefined,
      nodes: [],
    });
    expect(readRecord(undefined)).toEqual({ rollout: undefined, nodes: [] });
  });

  it('is named like numo names it, shortened with a hash beyond 253 characters', () => {
    expect(recordName('example')).toBe('numo-timeline-example');
    const long = recordName('a'.repeat(253));
    expect(long.length).toBeLessThanOrEqual(253);
    expect(long).toMatch(/^numo-timeline-a+-[0-9a-f]{10}$/);
    expect(long.endsWith(`-${sha256Hex('a'.repeat(253)).slice(0, 10)}`)).toBe(true);
  });

  it('hashes with SHA-256', () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256Hex('żółw')).toBe('f36b811094f4408ff06897bb585bbd814e42bb0463782c8b0b4d28d9ca8e2591');
    expect(sha256Hex('a'.repeat(1000))).toBe('41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3');
  });
});
