import type { Sample } from './samples.js';

// A mid-size application: a React front end on zod, date-fns, lodash and axios, compiled to
// CommonJS by tsc, linted by eslint, tested by jest through ts-jest's default preset.
export const appSized: Sample = {
  name: 'app-sized: react, zod, date-fns, lodash, axios; eslint + react-hooks, jest + ts-jest, prettier',
  manifest: {
    scripts: { build: 'tsc -p .', lint: 'eslint src test', test: 'jest', format: 'prettier --write src test' },
    dependencies: {
      axios: '1.13.2',
      'date-fns': '4.1.0',
      lodash: '4.17.21',
      react: '19.2.0',
      'react-dom': '19.2.0',
      zod: '4.1.12',
    },
    devDependencies: {
      '@eslint/js': '9.39.1',
      '@types/jest': '30.0.0',
      '@types/lodash': '4.17.20',
      '@types/node': '22.20.5',
      '@types/react': '19.2.2',
      '@types/react-dom': '19.2.2',
      eslint: '9.39.1',
      'eslint-plugin-react-hooks': '7.0.1',
      jest: '30.2.0',
      prettier: '3.10.1',
      'ts-jest': '29.4.5',
      typescript: '5.9.3',
      'typescript-eslint': '8.46.2',
    },
    // jest 30 resolves modules with unrs-resolver, whose 1.13.0 names per-platform bindings the
    // registry this bench reaches does not all have; npm 11 then writes a lockfile that `npm ci`
    // rejects as out of sync (npm/cli#9846). 1.12.2 has every binding.
    overrides: { 'unrs-resolver': '1.12.2' },
  },
  files: {
    'tsconfig.json': `${JSON.stringify(
      {
        compilerOptions: {
          target: 'ES2022',
          module: 'commonjs',
          lib: ['ES2022', 'DOM'],
          jsx: 'react-jsx',
          strict: true,
          esModuleInterop: true,
          skipLibCheck: true,
          outDir: 'dist',
          rootDir: '.',
          types: ['node', 'jest'],
        },
        include: ['src', 'test'],
      },
      null,
      2,
    )}\n`,
    'jest.config.js': `\
/** @type {import("jest").Config} */
module.exports = {
  preset: "ts-jest",
  testEnvironment: "node",
  roots: ["<rootDir>/test"],
};
`,
    'eslint.config.mjs': `\
import js from "@eslint/js";
import reactHooks from "eslint-plugin-react-hooks";
import tseslint from "typescript-eslint";

export default tseslint.config(
  js.configs.recommended,
  ...tseslint.configs.recommended,
  reactHooks.configs.flat.recommended,
);
`,
    '.prettierrc.json': `\
{ "printWidth": 100 }
`,
    'src/config.ts': `\
import { z } from "zod";

const envSchema = z.object({
  API_URL: z.url(),
  API_TIMEOUT_MS: z.coerce.number().int().positive().default(5000),
  LOCALE: z.string().default("en-US"),
  CURRENCY: z.string().length(3).default("EUR"),
});

export type AppConfig = z.infer<typeof envSchema>;

export function loadConfig(env: Record<string, string | undefined>): AppConfig {
  return envSchema.parse(env);
}
`,
    'src/invoice.ts': `\
import { addDays, differenceInCalendarDays, isAfter, parseISO } from "date-fns";
import { sumBy } from "lodash";
import { z } from "zod";

export const lineItemSchema = z.object({
  description: z.string().min(1),
  quantity: z.number().int().positive(),
  unitPriceCents: z.number().int().nonnegative(),
});

export const invoiceSchema = z.object({
  id: z.string().min(1),
  customer: z.string().min(1),
  issuedOn: z.iso.date(),
  paymentTermDays: z.number().int().nonnegative().default(30),
  items: z.array(lineItemSchema).min(1),
  paidOn: z.iso.date().nullable().default(null),
});

export type Invoice = z.infer<typeof invoiceSchema>;
export type InvoiceStatus = "paid" | "open" | "overdue";

export function totalCents(invoice: Invoice): number {
  return sumBy(invoice.items, (item) => item.quantity * item.unitPriceCents);
}

export function dueDate(invoice: Invoice): Date {
  return addDays(parseISO(invoice.issuedOn), invoice.paymentTermDays);
}

export function statusOf(invoice: Invoice, today: Date): InvoiceStatus {
  if (invoice.paidOn !== null) return "paid";
  return isAfter(today, dueDate(invoice)) ? "overdue" : "open";
}

export function daysOverdue(invoice: Invoice, today: Date): number {
  return Math.max(0, differenceInCalendarDays(today, dueDate(invoice)));
}
`,
    'src/summary.ts': `\
import { groupBy, orderBy } from "lodash";
import { type Invoice, statusOf, totalCents } from "./invoice";

export interface CustomerBalance {
  customer: string;
  openCents: number;
  overdueCount: number;
}

export function balancesByCustomer(invoices: readonly Invoice[], today: Date): CustomerBalance[] {
  const byCustomer = groupBy(invoices, (invoice) => invoice.customer);
  const balances = Object.entries(byCustomer).map(([customer, list]) => {
    const unpaid = list.filter((invoice) => statusOf(invoice, today) !== "paid");
    return {
      customer,
      openCents: unpaid.reduce((sum, invoice) => sum + totalCents(invoice), 0),
      overdueCount: unpaid.filter((invoice) => statusOf(invoice, today) === "overdue").length,
    };
  });
  return orderBy(balances, ["openCents", "customer"], ["desc", "asc"]);
}
`,
    'src/format.ts': `\
import { format } from "date-fns";

export function formatMoney(cents: number, currency: string, locale: string): string {
  return new Intl.NumberFormat(locale, { style: "currency", currency }).format(cents / 100);
}

export function formatDate(date: Date): string {
  return format(date, "d MMM yyyy");
}
`,
    'src/api/invoice-api.ts': `\
import axios, { type AxiosInstance } from "axios";
import { formatISO } from "date-fns";
import { z } from "zod";
import type { AppConfig } from "../config";
import { type Invoice, invoiceSchema } from "../invoice";

const invoiceListSchema = z.object({ invoices: z.array(invoiceSchema) });

export function createHttpClient(config: AppConfig): AxiosInstance {
  return axios.create({ baseURL: config.API_URL, timeout: config.API_TIMEOUT_MS });
}

export class InvoiceApi {
  constructor(private readonly http: AxiosInstance) {}

  async list(customer?: string): Promise<Invoice[]> {
    const response = await this.http.get("/invoices", { params: { customer } });
    return invoiceListSchema.parse(response.data).invoices;
  }

  async markPaid(id: string, paidOn: Date): Promise<Invoice> {
    const response = await this.http.post(\`/invoices/\${encodeURIComponent(id)}/payments\`, {
      paidOn: formatISO(paidOn, { representation: "date" }),
    });
    return invoiceSchema.parse(response.data);
  }
}
`,
    'src/components/invoice-table.tsx': `\
import { useMemo } from "react";
import { formatDate, formatMoney } from "../format";
import { type Invoice, dueDate, statusOf, totalCents } from "../invoice";

export interface InvoiceTableProps {
  invoices: readonly Invoice[];
  today: Date;
  currency: string;
  locale: string;
}

export function InvoiceTable({ invoices, today, currency, locale }: InvoiceTableProps) {
  const rows = useMemo(
    () => invoices.map((invoice) => ({ invoice, status: statusOf(invoice, today) })),
    [invoices, today],
  );
  if (rows.length === 0) return <p className="empty">No invoices</p>;
  return (
    <table>
      <tbody>
        {rows.map(({ invoice, status }) => (
          <tr key={invoice.id} className={status}>
            <td>{invoice.id}</td>
            <td>{invoice.customer}</td>
            <td>{formatDate(dueDate(invoice))}</td>
            <td>{formatMoney(totalCents(invoice), currency, locale)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
`,
    'test/fixtures.ts': `\
import { type Invoice, invoiceSchema } from "../src/invoice";

export const today = new Date(2025, 2, 15);

const items = (description: string, quantity: number, unitPriceCents: number) => [
  { description, quantity, unitPriceCents },
];

export const invoices: [Invoice, Invoice, Invoice] = [
  {
    id: "INV-001",
    customer: "Acme",
    issuedOn: "2025-01-10",
    items: [...items("Consulting", 10, 12000), ...items("Travel", 1, 4550)],
  },
  { id: "INV-002", customer: "Acme", issuedOn: "2025-03-01", items: items("Support", 1, 50000) },
  {
    id: "INV-003",
    customer: "Globex",
    issuedOn: "2025-01-20",
    paymentTermDays: 14,
    paidOn: "2025-01-30",
    items: items("Licence", 3, 9900),
  },
].map((raw) => invoiceSchema.parse(raw)) as [Invoice, Invoice, Invoice];
`,
    'test/invoice.test.ts': `\
import { loadConfig } from "../src/config";
import { formatMoney } from "../src/format";
import { daysOverdue, dueDate, statusOf, totalCents } from "../src/invoice";
import { balancesByCustomer } from "../src/summary";
import { invoices, today } from "./fixtures";

describe("invoice", () => {
  const [overdue, open, paid] = invoices;

  it("totals line items", () => {
    expect(totalCents(overdue)).toBe(124550);
    expect(formatMoney(totalCents(overdue), "EUR", "en-US")).toBe("€1,245.50");
  });

  it("derives the status from the payment and the due date", () => {
    expect(dueDate(overdue)).toEqual(new Date(2025, 1, 9));
    expect([overdue, open, paid].map((invoice) => statusOf(invoice, today))).toEqual([
      "overdue",
      "open",
      "paid",
    ]);
    expect(daysOverdue(overdue, today)).toBe(34);
    expect(daysOverdue(open, today)).toBe(0);
  });

  it("sums open balances per customer, largest first", () => {
    expect(balancesByCustomer(invoices, today)).toEqual([
      { customer: "Acme", openCents: 174550, overdueCount: 1 },
      { customer: "Globex", openCents: 0, overdueCount: 0 },
    ]);
  });
});

describe("config", () => {
  it("applies defaults and rejects an invalid URL", () => {
    expect(loadConfig({ API_URL: "https://api.example.com" })).toEqual({
      API_URL: "https://api.example.com",
      API_TIMEOUT_MS: 5000,
      LOCALE: "en-US",
      CURRENCY: "EUR",
    });
    expect(() => loadConfig({ API_URL: "not a url" })).toThrow();
  });
});
`,
    'test/invoice-api.test.ts': `\
import axios, { type AxiosAdapter } from "axios";
import { InvoiceApi } from "../src/api/invoice-api";
import { invoices } from "./fixtures";

function fakeApi(response: unknown) {
  const requests: unknown[] = [];
  const adapter: AxiosAdapter = async (config) => {
    requests.push({
      method: config.method,
      url: config.url,
      params: config.params,
      data: config.data,
    });
    return { data: response, status: 200, statusText: "OK", headers: {}, config };
  };
  return { api: new InvoiceApi(axios.create({ adapter })), requests };
}

describe("InvoiceApi", () => {
  it("lists and validates invoices", async () => {
    const { api, requests } = fakeApi({ invoices });
    await expect(api.list("Acme")).resolves.toEqual(invoices);
    expect(requests).toEqual([{ method: "get", url: "/invoices", params: { customer: "Acme" } }]);
  });

  it("rejects a malformed response", async () => {
    const { api } = fakeApi({ invoices: [{ id: "INV-9" }] });
    await expect(api.list()).rejects.toThrow();
  });

  it("records a payment", async () => {
    const paid = { ...invoices[1], paidOn: "2025-03-20" };
    const { api, requests } = fakeApi(paid);
    await expect(api.markPaid("INV-002", new Date(2025, 2, 20))).resolves.toEqual(paid);
    expect(requests).toEqual([
      { method: "post", url: "/invoices/INV-002/payments", data: '{"paidOn":"2025-03-20"}' },
    ]);
  });
});
`,
    'test/invoice-table.test.tsx': `\
import { renderToStaticMarkup } from "react-dom/server";
import { InvoiceTable } from "../src/components/invoice-table";
import { invoices, today } from "./fixtures";

const render = (list: typeof invoices | []) =>
  renderToStaticMarkup(
    <InvoiceTable invoices={list} today={today} currency="EUR" locale="en-US" />,
  );

describe("InvoiceTable", () => {
  it("renders one row per invoice, classed by status", () => {
    const html = render(invoices);
    expect(html.match(/<tr /g)).toHaveLength(3);
    expect(html).toContain(
      '<tr class="overdue"><td>INV-001</td><td>Acme</td><td>9 Feb 2025</td><td>€1,245.50</td></tr>',
    );
    expect(html).toContain('<tr class="paid"><td>INV-003</td>');
  });

  it("says so when there are no invoices", () => {
    expect(render([])).toBe('<p class="empty">No invoices</p>');
  });
});
`,
  },
  edit: 'src/format.ts',
};
