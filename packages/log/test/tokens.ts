// Example tokens of every kind the masker knows; fake values in the real formats.

/** Token kinds with an example value and the text it must become. */
export const TOKEN_KINDS = [
  { kind: 'GitHub classic', token: `ghp_${'A1b2C3d4E5'.repeat(3)}a1b2c3`, masked: 'ghp_[REDACTED]' },
  { kind: 'GitHub OAuth', token: `gho_${'Z9y8X7w6V5'.repeat(3)}z9y8x7`, masked: 'gho_[REDACTED]' },
  { kind: 'GitHub user-to-server', token: `ghu_${'k'.repeat(36)}`, masked: 'ghu_[REDACTED]' },
  { kind: 'GitHub server-to-server', token: `ghs_${'0'.repeat(36)}`, masked: 'ghs_[REDACTED]' },
  { kind: 'GitHub refresh', token: `ghr_${'Rr'.repeat(18)}`, masked: 'ghr_[REDACTED]' },
  {
    kind: 'GitHub fine-grained',
    token: `github_pat_11AAAAAAA0${'b'.repeat(12)}_${'C'.repeat(59)}`,
    masked: 'github_pat_[REDACTED]',
  },
  { kind: 'GitLab personal', token: `glpat-${'Ab3_-'.repeat(4)}`, masked: 'glpat-[REDACTED]' },
  { kind: 'npm', token: `npm_${'n0PqR5'.repeat(6)}`, masked: 'npm_[REDACTED]' },
  { kind: 'OpenAI', token: 'sk-abcdefghijklmnopqrstuvwxyz0123456789ABCD', masked: 'sk-[REDACTED]' },
  { kind: 'OpenAI project', token: 'sk-proj-abcDEF123_ghiJKL456-mnoPQR789', masked: 'sk-proj-[REDACTED]' },
  { kind: 'Anthropic', token: 'sk-ant-api03-abcdefghijklmnop_QRSTUVWXYZ-0123456789', masked: 'sk-ant-[REDACTED]' },
  { kind: 'AWS access key id', token: 'AKIAIOSFODNN7EXAMPLE', masked: 'AKIA[REDACTED]' },
  { kind: 'AWS temporary key id', token: 'ASIAY34FZKBOKMUTVV7A', masked: 'ASIA[REDACTED]' },
  { kind: 'Slack bot', token: 'xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx', masked: 'xoxb-[REDACTED]' },
] as const;
