import { truncateHead } from '@codefleet/core';

/** A group that encloses the result lines printed after it, deeper indented. */
interface Group {
  indent: number;
  name: string;
  /**
   * A node:test suite or TAP subtest: its own result line follows its children at its own
   * indent and is no test of its own. A describe title of jest or mocha has no result line.
   */
  closes: boolean;
  /** A result line was seen inside it: then its own result line is a suite's, not a leaf test's. */
  hasChildren: boolean;
}

// Deeper nesting than this is real in no suite; past it, groups are left out of names.
const maxDepth = 64;
/** Characters of a group title kept: a test's name joins several of them. */
export const maxNameChars = 500;

/**
 * The groups (describe blocks, suites, TAP subtests) enclosing the current line of an
 * indented result tree, innermost last. Runners indent children deeper than their group,
 * so a line at some indent closes every group at that indent or deeper: a stray line taken
 * for a group (a console message) is dropped by the next result at its level.
 */
export class Nesting {
  private readonly groups: Group[] = [];

  /** Opens a group at `indent`, closing those at that indent or deeper. */
  open(indent: number, name: string, closes: boolean): void {
    this.leave(indent);
    if (this.groups.length < maxDepth)
      this.groups.push({ indent, name: truncateHead(name, maxNameChars), closes, hasChildren: false });
  }

  /**
   * A result line at `indent` named `name`: the enclosing group titles when it is a test,
   * or undefined when it is the result of the group it closes (a suite with children).
   */
  result(indent: number, name: string): string[] | undefined {
    while (this.innermost !== undefined && this.innermost.indent > indent) this.groups.pop();
    const own = this.innermost;
    let leaf = true;
    if (own?.indent === indent && own.closes && own.name === truncateHead(name, maxNameChars)) {
      this.groups.pop();
      leaf = !own.hasChildren;
    } else this.leave(indent);
    const parent = this.innermost;
    if (parent !== undefined) parent.hasChildren = true;
    return leaf ? this.titles() : undefined;
  }

  /**
   * The enclosing titles, outermost first, as many as fit in {@link maxNameChars}: a name
   * is cut there anyway, and a deep tree of long titles must not make every line costly.
   */
  private titles(): string[] {
    const titles: string[] = [];
    let chars = 0;
    for (const group of this.groups) {
      if (chars >= maxNameChars) break;
      titles.push(group.name);
      chars += group.name.length;
    }
    return titles;
  }

  /** Whether a line at `indent` is inside a group that closes with its own result (node:test). */
  insideSuite(indent: number): boolean {
    return this.groups.some((group) => group.closes && group.indent < indent);
  }

  clear(): void {
    this.groups.length = 0;
  }

  private get innermost(): Group | undefined {
    return this.groups.at(-1);
  }

  private leave(indent: number): void {
    while (this.innermost !== undefined && this.innermost.indent >= indent) this.groups.pop();
  }
}
