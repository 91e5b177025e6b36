/** Kafka's murmur2 (the Java client's DefaultPartitioner), so embedded and Kafka place keys alike. */
function murmur2(data: Uint8Array): number {
  const length = data.length;
  const seed = 0x9747b28c;
  const m = 0x5bd1e995;
  const r = 24;
  let h = seed ^ length;
  const length4 = length >> 2;
  for (let i = 0; i < length4; i++) {
    const i4 = i * 4;
    let k =
      (data[i4]! & 0xff) +
      ((data[i4 + 1]! & 0xff) << 8) +
      ((data[i4 + 2]! & 0xff) << 16) +
      ((data[i4 + 3]! & 0xff) << 24);
    k = Math.imul(k, m);
    k ^= k >>> r;
    k = Math.imul(k, m);
    h = Math.imul(h, m);
    h ^= k;
  }
  const tail = length & 3;
  const index = length & ~3;
  if (tail === 3) h ^= (data[index + 2]! & 0xff) << 16;
  if (tail >= 2) h ^= (data[index + 1]! & 0xff) << 8;
  if (tail >= 1) {
    h ^= data[index]! & 0xff;
    h = Math.imul(h, m);
  }
  h ^= h >>> 13;
  h = Math.imul(h, m);
  h ^= h >>> 15;
  return h;
}

export function partitionForKey(key: string, partitions: number): number {
  return (murmur2(new TextEncoder().encode(key)) & 0x7fffffff) % partitions;
}
