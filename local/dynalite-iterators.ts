import { createRequire } from "node:module";

/**
 * dynalite 4 reads queries and scans through a Node stream over an abstract-level iterator and
 * closes it by calling the iterator's `return()`, which abstract-level 3 iterators do not
 * have (they have `close()`). So every Query and Scan left a LevelDB iterator open, with the
 * native memory it pins: the soak saw the runtime's resident memory grow by about 40 MB a
 * minute, two iterators per query. Giving the iterators a `return()` that closes them lets
 * dynalite's own clean-up work. Applied once, before dynalite opens a database.
 */
interface IteratorClass {
  prototype: { close(): Promise<void>; return?: () => Promise<IteratorResult<never>> };
}

let patched = false;

export function closeDynaliteIterators(): void {
  if (patched) return;
  patched = true;
  // abstract-level as dynalite itself resolves it.
  const fromDynalite = createRequire(createRequire(import.meta.url).resolve("dynalite"));
  const level = fromDynalite("abstract-level") as Record<string, IteratorClass>;
  for (const name of ["AbstractIterator", "AbstractKeyIterator", "AbstractValueIterator"]) {
    const prototype = level[name]?.prototype;
    if (prototype && prototype.return === undefined) {
      prototype.return = async function (this: { close(): Promise<void> }) {
        await this.close();
        return { done: true, value: undefined };
      };
    }
  }
}
