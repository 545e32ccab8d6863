export const hello = (n: number): number => n + 1;
