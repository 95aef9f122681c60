// @hangar-notebook {"name":"sales","created_at":"2026-11-21T12:00:00.000Z","metadata":{"description":"Monthly sales by region and product, from a small shipped CSV"}}

// %% [markdown] id=intro001 name="intro"
// # Sales 2025
//
// Monthly unit sales and revenue for four regions and three products, read from `data/sales.csv`
// (144 rows). Edit the threshold cell and only the cells that depend on it re-run.

// %% [code] id=load0001 name="load"
import * as aq from 'arquero';
import { readFile } from 'node:fs/promises';

const sales = aq.fromCSV(await readFile(notebookPath('data/sales.csv'), 'utf8'));
console.log(`${sales.numRows()} rows, columns: ${sales.columnNames().join(', ')}`);

// %% [code] id=region01 name="revenue by region"
const byRegion = sales
  .groupby('region')
  .rollup({ revenue: aq.op.sum('revenue'), units: aq.op.sum('units') })
  .orderby(aq.desc('revenue'));
byRegion

// %% [code] id=monthly1 name="monthly revenue"
const monthly = sales
  .derive({ month: aq.escape((d: { date: Date }) => d.date.toISOString().slice(0, 7)) })
  .groupby('month', 'region')
  .rollup({ revenue: aq.op.sum('revenue') })
  .orderby('month', 'region');

// %% [code] id=chart001 name="chart"
chart({
  title: 'Revenue by month and region',
  mark: 'line',
  width: 640,
  height: 320,
  data: { values: monthly.objects() },
  encoding: {
    x: { field: 'month', type: 'ordinal' },
    y: { field: 'revenue', type: 'quantitative', title: 'revenue ($)' },
    color: { field: 'region', type: 'nominal' },
  },
});

// %% [code] id=thresh01 name="threshold"
const threshold: number = 2500;

// %% [code] id=bigmon01 name="big months"
const bigMonths = monthly.filter(aq.escape((d: { revenue: number }) => d.revenue > threshold));
md`**${bigMonths.numRows()}** region-months above $${threshold.toLocaleString('en-US')}`

// %% [code] id=bigtab01 name="big months table"
bigMonths.objects()
