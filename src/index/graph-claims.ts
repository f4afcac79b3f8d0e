/**
 * The claim counter a search shares with the search thread (graph-worker.ts): each thread takes
 * the next unclaimed graph until none is left, so a late or descheduled thread leaves its share
 * to the other instead of being waited for.
 */
export type GraphClaims = Int32Array;

export const newGraphClaims = (): GraphClaims => new Int32Array(new SharedArrayBuffer(4));

/** Takes the next graph of a shared search: its position, or -1 when all are taken. */
export function claimGraph(claims: GraphClaims, count: number): number {
  const i = Atomics.add(claims, 0, 1);
  return i < count ? i : -1;
}
