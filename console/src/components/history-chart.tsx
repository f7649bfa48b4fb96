// A resource's history drawn by uPlot over the whole range shown, in the page's colours (light or
// dark), resized with its container: a sensor's min-max band with its mean line, or the share of
// each bucket a switch spent on as steps. What it shows is said in words beside it.
import type { ComponentChildren, RefObject } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { type BucketLength, type HistoryBucket, type HistoryWindow, percentOn } from '../history';

const HEIGHT = 260;
/** Below this many buckets each one is marked, so a lone reading is seen. */
const MARK_BELOW = 60;

function cssVariable(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

/** A colour of styles.css (`#rrggbb`) made see-through. */
function translucent(color: string, alpha: string): string {
  return /^#[0-9a-f]{6}$/i.test(color) ? `${color}${alpha}` : color;
}

const seconds = (iso: string) => Date.parse(iso) / 1000;

const tickTime = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const tickDay = new Intl.DateTimeFormat(undefined, { day: 'numeric', month: 'short' });

/** The time axis's labels as the rest of the console writes times: the clock, or the day at midnight. */
function timeTick(_chart: uPlot, ticks: number[]): string[] {
  return ticks.map((tick) => {
    const date = new Date(tick * 1000);
    return date.getHours() === 0 && date.getMinutes() === 0 ? tickDay.format(date) : tickTime.format(date);
  });
}

function baseOptions(element: HTMLElement, span: HistoryWindow): Omit<uPlot.Options, 'series'> {
  const axisColor = cssVariable('--text-muted');
  const gridColor = cssVariable('--border');
  const axis = { stroke: axisColor, grid: { stroke: gridColor, width: 1 }, ticks: { stroke: gridColor } };
  return {
    width: Math.max(240, element.clientWidth),
    height: HEIGHT,
    legend: { show: false },
    cursor: { drag: { x: false, y: false } },
    scales: { x: { time: true, range: () => [span.fromMs / 1000, span.toMs / 1000] } },
    axes: [
      { ...axis, values: timeTick },
      { ...axis, size: 56 },
    ],
  };
}

function useChart(build: (element: HTMLElement) => { options: uPlot.Options; data: uPlot.AlignedData }, deps: unknown[]) {
  const container = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = container.current;
    if (!element) return;
    const { options, data } = build(element);
    const chart = new uPlot(options, data, element);
    const resize = new ResizeObserver(() => chart.setSize({ width: Math.max(240, element.clientWidth), height: HEIGHT }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      chart.destroy();
    };
  }, deps);
  return container;
}

function Figure({
  container,
  label,
  legend,
  children,
}: {
  container: RefObject<HTMLDivElement | null>;
  label: string;
  legend: Array<[string, string]>;
  children: ComponentChildren;
}) {
  return (
    <figure class="chart history-chart">
      <div ref={container} role="img" aria-label={label} />
      <figcaption>
        <ul class="legend">
          {legend.map(([text, swatch]) => (
            <li key={text}>
              <span class={`swatch ${swatch}`} aria-hidden="true" />
              {text}
            </li>
          ))}
        </ul>
        {children}
      </figcaption>
    </figure>
  );
}

/** A sensor's buckets with numeric points: the band from min to max, the mean through it. */
export function BandChart({
  buckets,
  span,
  label,
  children,
}: {
  buckets: readonly HistoryBucket[];
  span: HistoryWindow;
  label: string;
  children: ComponentChildren;
}) {
  const container = useChart(
    (element) => {
      const numeric = buckets.filter((bucket) => bucket.mean !== undefined);
      const color = cssVariable('--series-1');
      const marked = numeric.length < MARK_BELOW;
      const edge = { stroke: translucent(color, '66'), width: 1, points: { show: false } };
      return {
        options: {
          ...baseOptions(element, span),
          series: [
            {},
            { label: 'Highest', ...edge },
            { label: 'Lowest', ...edge },
            { label: 'Mean', stroke: color, width: 2, points: { show: marked, size: 5 } },
          ],
          bands: [{ series: [1, 2], fill: translucent(color, '33') }],
        },
        data: [
          numeric.map((bucket) => seconds(bucket.start)),
          numeric.map((bucket) => bucket.max ?? null),
          numeric.map((bucket) => bucket.min ?? null),
          numeric.map((bucket) => bucket.mean ?? null),
        ],
      };
    },
    [buckets, span],
  );
  return (
    <Figure
      container={container}
      label={label}
      legend={[
        ['Mean', 'swatch-series-1'],
        ['Lowest to highest', 'swatch-band'],
      ]}
    >
      {children}
    </Figure>
  );
}

/** A binary_sensor's or switch's buckets: how much of each it spent on, 0-100 %, as steps. */
export function OnOffChart({
  buckets,
  length,
  span,
  label,
  children,
}: {
  buckets: readonly HistoryBucket[];
  length: BucketLength;
  span: HistoryWindow;
  label: string;
  children: ComponentChildren;
}) {
  const container = useChart(
    (element) => {
      const color = cssVariable('--series-3');
      const now = Date.now();
      const base = baseOptions(element, span);
      // The last bucket's step reaches to its end: a step is drawn up to the next point.
      const last = buckets.at(-1);
      const xs = buckets.map((bucket) => seconds(bucket.start));
      const shares: Array<number | null> = buckets.map((bucket) => percentOn(bucket, length, now));
      if (last) {
        xs.push(seconds(last.start) + length.seconds);
        shares.push(shares.at(-1) ?? null);
      }
      return {
        options: {
          ...base,
          scales: { ...base.scales, y: { range: [0, 100] } },
          axes: [base.axes?.[0] ?? {}, { ...base.axes?.[1], values: (_chart, ticks) => ticks.map((tick) => `${tick} %`) }],
          series: [
            {},
            { label: 'Time on', stroke: color, fill: translucent(color, '55'), width: 2, paths: uPlot.paths.stepped?.({ align: 1 }), points: { show: false } },
          ],
        },
        data: [xs, shares],
      };
    },
    [buckets, length, span],
  );
  return (
    <Figure container={container} label={label} legend={[['Share of each bucket on', 'swatch-series-3']]}>
      {children}
    </Figure>
  );
}
