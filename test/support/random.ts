/** A small deterministic generator of integers below `below`, so that a failure can be replayed from its seed. */
export function seededRandom(seed: number): (below: number) => number {
  let state = seed;
  return (below) => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    // The high bits: the low ones of this generator repeat with a short period.
    return Math.floor((state / 2_147_483_648) * below);
  };
}
