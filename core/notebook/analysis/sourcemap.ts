/**
 * The little of a source map the notebook needs: per generated line, which line of the cell it came
 * from (and where esbuild renamed an identifier). Decoded by hand because only the `mappings` VLQ
 * is read, in one pass — a general source-map library would parse far more than is used.
 */
const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const BASE64_INDEX = new Int8Array(128).fill(-1);
for (let i = 0; i < BASE64.length; i++) BASE64_INDEX[BASE64.charCodeAt(i)] = i;

/**
 * Decode just enough of a source map to know, for each generated line, which source line it came
 * from (the first mapped segment wins). Used to report runtime errors at the cell's own line.
 */
export function decodeLineMap(mapJson: string): number[] {
  return decodeSegments(mapJson).map((segments) => segments[0]?.[1]) as number[];
}

/** `[generatedColumn, sourceLine, nameIndex?]`: the name index is set where esbuild renamed an identifier. */
export type Segment = [number, number, number?];

/**
 * Per generated line, the `[generatedColumn, sourceLine]` pairs of its mapped segments (columns
 * 0-based, lines 1-based). esbuild joins chained calls onto one line, so a runtime error's column
 * is needed to find the source line it came from.
 */
export function decodeSegments(mapJson: string): Array<Array<Segment>> {
  return decodeMappings((JSON.parse(mapJson) as { mappings: string }).mappings);
}

/** `decodeSegments` of a map already parsed: its `mappings` string. */
export function decodeMappings(mappings: string): Array<Array<Segment>> {
  const lines: Array<Array<Segment>> = [[]];
  let sourceLine = 0;
  let nameIndex = 0;
  let column = 0;
  // One pass over the characters: `;` ends a line, `,` a segment, anything else is a VLQ digit.
  const fields = [0, 0, 0, 0, 0];
  let count = 0;
  let value = 0;
  let shift = 0;
  const endSegment = () => {
    if (count > 0) {
      column += fields[0];
      if (count >= 4) {
        sourceLine += fields[2];
        if (count >= 5) {
          nameIndex += fields[4];
          lines[lines.length - 1].push([column, sourceLine + 1, nameIndex]);
        } else lines[lines.length - 1].push([column, sourceLine + 1]);
      }
    }
    count = 0;
  };
  for (let i = 0; i < mappings.length; i++) {
    const code = mappings.charCodeAt(i);
    if (code === 59 /* ; */) {
      endSegment();
      lines.push([]);
      column = 0;
    } else if (code === 44 /* , */) {
      endSegment();
    } else {
      const digit = BASE64_INDEX[code];
      value += (digit & 31) << shift;
      if (digit & 32) shift += 5;
      else {
        if (count < 5) fields[count] = value & 1 ? -(value >>> 1) : value >>> 1;
        count++;
        value = 0;
        shift = 0;
      }
    }
  }
  endSegment();
  return lines;
}
