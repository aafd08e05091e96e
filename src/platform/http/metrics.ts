const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

interface Series {
  labels: string;
  count: number;
  sum: number;
  buckets: number[];
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function labelText(labels: Record<string, string>): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}="${escapeLabel(v)}"`)
    .join(',');
}

/** A counter per label set, for modules' own metrics (rendered with /metrics). */
export class Counter {
  private readonly values = new Map<string, number>();

  constructor(
    private readonly name: string,
    private readonly help: string,
  ) {}

  inc(labels: Record<string, string>, by = 1): void {
    const key = labelText(labels);
    this.values.set(key, (this.values.get(key) ?? 0) + by);
  }

  render(): string[] {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`];
    for (const [labels, value] of this.values) lines.push(`${this.name}{${labels}} ${value}`);
    return lines;
  }
}

/** A latency histogram per label set, in seconds. */
export class Histogram {
  private readonly series = new Map<string, Omit<Series, 'labels'>>();

  constructor(
    private readonly name: string,
    private readonly help: string,
    private readonly buckets: number[] = BUCKETS,
  ) {}

  observe(labels: Record<string, string>, seconds: number): void {
    const key = labelText(labels);
    let s = this.series.get(key);
    if (!s) this.series.set(key, (s = { count: 0, sum: 0, buckets: this.buckets.map(() => 0) }));
    s.count++;
    s.sum += seconds;
    for (let i = 0; i < this.buckets.length; i++) if (seconds <= this.buckets[i]!) s.buckets[i]!++;
  }

  render(): string[] {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    for (const [labels, s] of this.series) {
      const sep = labels ? `${labels},` : '';
      this.buckets.forEach((b, i) => lines.push(`${this.name}_bucket{${sep}le="${b}"} ${s.buckets[i]}`));
      lines.push(`${this.name}_bucket{${sep}le="+Inf"} ${s.count}`);
      lines.push(`${this.name}_sum${labels ? `{${labels}}` : ''} ${s.sum}`);
      lines.push(`${this.name}_count${labels ? `{${labels}}` : ''} ${s.count}`);
    }
    return lines;
  }
}

/** Request count and latency per route and status, in Prometheus text format. */
export class HttpMetrics {
  private readonly series = new Map<string, Series>();
  private readonly collectors: Array<() => string[]> = [];

  /** Adds a module's metrics (counters, histograms) to what /metrics renders. */
  addCollector(render: () => string[]): void {
    this.collectors.push(render);
  }

  observe(method: string, route: string, status: number, seconds: number): void {
    // Keyed by the raw values; the escaped label text is built once per series, not per request.
    const key = `${method} ${status} ${route}`;
    let s = this.series.get(key);
    if (!s) {
      s = { labels: `method="${method}",route="${escapeLabel(route)}",status="${status}"`, count: 0, sum: 0, buckets: BUCKETS.map(() => 0) };
      this.series.set(key, s);
    }
    s.count++;
    s.sum += seconds;
    for (let i = 0; i < BUCKETS.length; i++) if (seconds <= BUCKETS[i]!) s.buckets[i]!++;
  }

  render(gauges: Array<{ name: string; help: string; values: Array<{ labels: string; value: number }> }>): string {
    const lines = [
      '# HELP corridor_http_requests_total HTTP requests answered.',
      '# TYPE corridor_http_requests_total counter',
    ];
    for (const s of this.series.values()) lines.push(`corridor_http_requests_total{${s.labels}} ${s.count}`);
    lines.push('# HELP corridor_http_request_duration_seconds Time to answer HTTP requests.');
    lines.push('# TYPE corridor_http_request_duration_seconds histogram');
    for (const s of this.series.values()) {
      BUCKETS.forEach((b, i) => lines.push(`corridor_http_request_duration_seconds_bucket{${s.labels},le="${b}"} ${s.buckets[i]}`));
      lines.push(`corridor_http_request_duration_seconds_bucket{${s.labels},le="+Inf"} ${s.count}`);
      lines.push(`corridor_http_request_duration_seconds_sum{${s.labels}} ${s.sum}`);
      lines.push(`corridor_http_request_duration_seconds_count{${s.labels}} ${s.count}`);
    }
    for (const g of gauges) {
      lines.push(`# HELP ${g.name} ${g.help}`, `# TYPE ${g.name} gauge`);
      for (const v of g.values) lines.push(`${g.name}${v.labels ? `{${v.labels}}` : ''} ${v.value}`);
    }
    for (const collect of this.collectors) lines.push(...collect());
    return `${lines.join('\n')}\n`;
  }
}
