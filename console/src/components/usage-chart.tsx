// Daily usage drawn by uPlot: one line per measure, in the page's colours (light or dark), resized
// with its container. The same numbers are in a table beside it for screen readers and copying.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface UsageSeries {
  label: string;
  /** A CSS custom property of styles.css holding the series colour. */
  colorVariable: string;
  values: number[];
}

function cssVariable(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

export function UsageChart({ days, series, label }: { days: string[]; series: UsageSeries[]; label: string }) {
  const container = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = container.current;
    if (!element) return;
    const axisColor = cssVariable('--text-muted');
    const gridColor = cssVariable('--border');
    const xs = days.map((day) => Date.parse(`${day}T00:00:00Z`) / 1000);
    const options: uPlot.Options = {
      width: Math.max(280, element.clientWidth),
      height: 260,
      tzDate: (seconds) => uPlot.tzDate(new Date(seconds * 1000), 'Etc/UTC'),
      legend: { show: false },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true }, y: { range: (_plot, _min, max) => [0, Math.max(1, max * 1.1)] } },
      axes: [
        { stroke: axisColor, grid: { stroke: gridColor, width: 1 }, ticks: { stroke: gridColor } },
        { stroke: axisColor, grid: { stroke: gridColor, width: 1 }, ticks: { stroke: gridColor } },
      ],
      series: [{}, ...series.map((entry) => ({ label: entry.label, stroke: cssVariable(entry.colorVariable), width: 2, points: { show: true, size: 5 } }))],
    };
    const chart = new uPlot(options, [xs, ...series.map((entry) => entry.values)], element);
    const resize = new ResizeObserver(() => chart.setSize({ width: Math.max(280, element.clientWidth), height: 260 }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      chart.destroy();
    };
  }, [days, series]);
  return (
    <figure class="chart">
      <div ref={container} role="img" aria-label={label} />
      <figcaption>
        <ul class="legend">
          {series.map((entry) => (
            <li key={entry.label}>
              <span class={`swatch swatch-${entry.colorVariable.replace('--', '')}`} aria-hidden="true" />
              {entry.label}
            </li>
          ))}
        </ul>
      </figcaption>
    </figure>
  );
}
