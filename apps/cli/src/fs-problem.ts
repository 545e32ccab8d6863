/** A file system error as a short phrase (`no such file or directory`), for messages that name the path. */
export function fsProblem(error: unknown): string {
  switch ((error as { code?: unknown }).code) {
    case 'ENOENT':
      return 'no such file or directory';
    case 'EISDIR':
      return 'is a directory, not a file';
    case 'ENOTDIR':
      return 'a part of the path is a file, not a directory';
    case 'EEXIST':
      return 'exists and is not a directory';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EROFS':
      return 'read-only file system';
    case 'ELOOP':
      return 'too many levels of symbolic links';
    default:
      return (error as Error).message ?? String(error);
  }
}
