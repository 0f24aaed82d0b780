// AssemblyScript: the NF4 levels (../../nf4.ts' NF4_LEVELS, bitsandbytes'),
// as byte planes for i8x16.swizzle lookups, followed by the f32 table itself.

const LEVELS: usize = memory.data<f32>([
  -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
  -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
  0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
  0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
]);

/** 4 × 16 bytes: plane k holds byte k of each level; then the 16 f32 levels. */
export const NF4_PLANES: usize = memory.data(128, 16);

// Filled once when the module starts.
for (let i = 0; i < 16; i++) {
  const bits = load<u32>(LEVELS + <usize>i * 4);
  for (let k = 0; k < 4; k++) store<u8>(NF4_PLANES + <usize>(16 * k + i), <u8>(bits >>> (8 * k)));
  store<u32>(NF4_PLANES + 64 + <usize>i * 4, bits);
}
