/**
 * DynamoDB's UpdateItem, implemented here apart from the code under test: the item an update
 * leaves when applied to the item stored under its key (as the document client sees items:
 * plain values, Sets for sets), and the ways DynamoDB refuses the update itself (docs: "Using
 * update expressions in DynamoDB"). The grammar covered: SET with a value, a path,
 * if_not_exists(path, v), list_append(a, b), a + b and a - b; REMOVE; ADD to a number or a set;
 * DELETE from a set; #name and :value placeholders; nested paths (a.b[2].c).
 */
type Item = Record<string, unknown>;
type Path = readonly (string | number)[];

export interface UpdateInput {
  readonly Key: Item;
  readonly UpdateExpression?: string;
  readonly ExpressionAttributeNames?: Record<string, string>;
  readonly ExpressionAttributeValues?: Record<string, unknown>;
}

const KEYWORDS = ["SET", "REMOVE", "ADD", "DELETE"] as const;
type Keyword = (typeof KEYWORDS)[number];
const keywordOf = (token: string | undefined) =>
  KEYWORDS.find((k) => k === token?.toUpperCase()) as Keyword | undefined;

class SyntaxProblem extends Error {}

const isMap = (value: unknown): value is Item =>
  typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof Set);

function getPath(item: Item, path: Path): unknown {
  let value: unknown = item;
  for (const segment of path) {
    if (typeof segment === "number") value = Array.isArray(value) ? value[segment] : undefined;
    else value = isMap(value) ? value[segment] : undefined;
  }
  return value;
}

const show = (path: Path) =>
  path.map((s, i) => (typeof s === "number" ? `[${s}]` : i === 0 ? s : `.${s}`)).join("");

/**
 * The item `input` leaves when applied to `stored` (undefined: no item, one is created from the
 * key), and the problems DynamoDB would refuse the update for. Every operand is read from the
 * item as it was, before any action, as DynamoDB does.
 */
export function applyUpdate(
  stored: Item | undefined,
  input: UpdateInput,
  keyNames: readonly string[],
): { item: Item; problems: string[] } {
  const problems: string[] = [];
  const item: Item = { ...structuredClone(stored ?? {}), ...input.Key };
  const before = structuredClone(item);
  const tokens =
    (input.UpdateExpression ?? "").match(/[#:]?[A-Za-z_][A-Za-z0-9_]*|\[\d+\]|[.(),=+-]|\S/g) ?? [];
  let at = 0;
  const peek = () => tokens[at];
  const next = () => {
    const token = tokens[at++];
    if (token === undefined) throw new SyntaxProblem("the expression ends early");
    return token;
  };
  const expect = (token: string) => {
    const found = next();
    if (found !== token) throw new SyntaxProblem(`${token} expected, ${found} found`);
  };
  const name = (token: string) => {
    if (!token.startsWith("#")) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(token)) throw new SyntaxProblem(`${token} is not a name`);
      return token;
    }
    const resolved = input.ExpressionAttributeNames?.[token];
    if (resolved === undefined) throw new SyntaxProblem(`${token} is not given`);
    return resolved;
  };
  const path = (): Path => {
    const segments: (string | number)[] = [name(next())];
    for (;;) {
      const token = peek();
      if (token === ".") {
        at += 1;
        segments.push(name(next()));
      } else if (token?.startsWith("[")) {
        at += 1;
        segments.push(Number(token.slice(1, -1)));
      } else return segments;
    }
  };
  const given = (token: string) => {
    if (!Object.hasOwn(input.ExpressionAttributeValues ?? {}, token)) {
      throw new SyntaxProblem(`${token} is not given`);
    }
    return input.ExpressionAttributeValues?.[token];
  };
  /** An operand, read from the item as it was. */
  const operand = (): unknown => {
    const token = peek() ?? "";
    if (token.startsWith(":")) return given(next());
    if (token === "if_not_exists" || token === "list_append") {
      at += 1;
      expect("(");
      if (token === "if_not_exists") {
        const existing = getPath(before, path());
        expect(",");
        const fallback = value();
        expect(")");
        return existing ?? fallback;
      }
      const first = value();
      expect(",");
      const second = value();
      expect(")");
      if (!Array.isArray(first) || !Array.isArray(second)) {
        problems.push("list_append: both operands must be lists");
        return first;
      }
      return [...first, ...second];
    }
    const from = path();
    const found = getPath(before, from);
    if (found === undefined)
      problems.push(`${show(from)}: the expression reads an attribute that does not exist`);
    return found;
  };
  const value = (): unknown => {
    const left = operand();
    const sign = peek();
    if (sign !== "+" && sign !== "-") return left;
    at += 1;
    const right = operand();
    if (typeof left !== "number" || typeof right !== "number") {
      problems.push(`${sign}: both operands must be numbers`);
      return left;
    }
    return sign === "+" ? left + right : left - right;
  };

  const actions: Array<{ keyword: Keyword; path: Path; value?: unknown }> = [];
  try {
    const seen = new Set<Keyword>();
    while (at < tokens.length) {
      const keyword = keywordOf(next());
      if (keyword === undefined)
        throw new SyntaxProblem(`SET, REMOVE, ADD or DELETE expected at ${tokens[at - 1]}`);
      if (seen.has(keyword)) problems.push(`${keyword} appears twice`);
      seen.add(keyword);
      for (;;) {
        const target = path();
        if (keyword === "SET") {
          expect("=");
          actions.push({ keyword, path: target, value: value() });
        } else if (keyword === "REMOVE") actions.push({ keyword, path: target });
        else {
          const token = next();
          if (!token.startsWith(":")) throw new SyntaxProblem(`${keyword} takes a :value, not ${token}`);
          actions.push({ keyword, path: target, value: given(token) });
        }
        if (peek() !== ",") break;
        at += 1;
      }
      if (at < tokens.length && keywordOf(peek()) === undefined) {
        throw new SyntaxProblem(`unexpected ${peek()}`);
      }
    }
  } catch (error) {
    if (!(error instanceof SyntaxProblem)) throw error;
    return { item, problems: [...problems, `UpdateExpression: ${error.message}`] };
  }
  if (actions.length === 0) problems.push("UpdateExpression: no action");

  for (const [i, action] of actions.entries()) {
    const top = action.path[0];
    if (typeof top === "string" && keyNames.includes(top)) {
      problems.push(`${show(action.path)}: a key attribute cannot be updated`);
    }
    for (const other of actions.slice(i + 1)) {
      const shorter = action.path.length <= other.path.length ? action.path : other.path;
      const longer = shorter === action.path ? other.path : action.path;
      if (shorter.every((segment, j) => segment === longer[j])) {
        problems.push(`${show(action.path)} and ${show(other.path)}: two document paths overlap`);
      }
    }
  }
  const listRemovals: { list: unknown[]; index: number }[] = [];
  for (const action of actions) {
    const parent = action.path.length === 1 ? item : getPath(item, action.path.slice(0, -1));
    const last = action.path[action.path.length - 1] as string | number;
    const current = getPath(item, action.path);
    if ((action.keyword === "ADD" || action.keyword === "DELETE") && action.path.length > 1) {
      problems.push(`${show(action.path)}: ${action.keyword} takes a top-level attribute only`);
      continue;
    }
    let result: unknown = action.value;
    if (action.keyword === "REMOVE") result = undefined;
    if (action.keyword === "ADD") {
      const added = action.value;
      if (typeof added === "number" && (current === undefined || typeof current === "number")) {
        result = (current ?? 0) + added;
      } else if (added instanceof Set && (current === undefined || current instanceof Set)) {
        result = new Set([...(current ?? []), ...added]);
      } else {
        problems.push(`${show(action.path)}: ADD takes a number to a number, or a set to a set`);
        continue;
      }
    }
    if (action.keyword === "DELETE") {
      if (!(action.value instanceof Set) || !(current === undefined || current instanceof Set)) {
        problems.push(`${show(action.path)}: DELETE takes a set from a set`);
        continue;
      }
      const removed = action.value;
      const left = [...(current ?? [])].filter((element) => !removed.has(element));
      result = left.length === 0 ? undefined : new Set(left);
    }
    if (Array.isArray(parent) && typeof last === "number") {
      // Removed list elements go at the end, highest index first: every path names an index of
      // the item as it was (DynamoDB resolves them all before applying any).
      if (result === undefined) {
        if (last < parent.length) listRemovals.push({ list: parent, index: last });
      } else parent[Math.min(last, parent.length)] = result;
    } else if (isMap(parent) && typeof last === "string") {
      if (result === undefined) delete parent[last];
      else parent[last] = result;
    } else if (action.keyword !== "REMOVE") {
      problems.push(`${show(action.path)}: the document path is not valid for this item`);
    }
  }
  for (const { list, index } of listRemovals.sort((a, b) => b.index - a.index)) list.splice(index, 1);
  return { item, problems };
}
