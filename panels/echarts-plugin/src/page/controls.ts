import { TEST_IDS } from '../constants/testIds';
import { MAX_SMOOTHING } from '../core/smoothing';
import type { XMode } from '../types/api';
import type { SmoothingKind } from '../types/chart';
import { el } from './dom';
import type { LiveState } from './liveSocket';

export interface ControlValues {
  smoothing: number;
  smoothingKind: SmoothingKind;
  xMode: XMode;
  logY: boolean;
  ignoreOutliers: boolean;
  showEnvelope: boolean;
}

function toggle(
  testId: string,
  label: string,
  checked: boolean,
  title: string,
  onChange: (checked: boolean) => void,
): HTMLLabelElement {
  const input = el('input', { type: 'checkbox', 'data-testid': testId });
  input.checked = checked;
  input.addEventListener('change', () => onChange(input.checked));
  return el('label', { class: 'toggle', title }, input, label);
}

const LIVE_TEXT: Record<LiveState, string> = { open: 'live', connecting: 'connecting', offline: 'offline' };

/** The top bar: smoothing, x axis, log y, outliers, band, live status and theme. */
export class Controls {
  readonly root: HTMLElement;
  private readonly live: HTMLSpanElement;
  private readonly theme: HTMLButtonElement;

  constructor(
    private values: ControlValues,
    onChange: (values: ControlValues) => void,
    onToggleTheme: () => void,
  ) {
    const emit = (change: Partial<ControlValues>) => {
      this.values = { ...this.values, ...change };
      onChange({ ...this.values });
    };

    const slider = el('input', {
      type: 'range',
      min: 0,
      max: MAX_SMOOTHING,
      step: 0.001,
      'data-testid': TEST_IDS.smoothingSlider,
      'aria-label': 'Smoothing',
    });
    slider.value = String(values.smoothing);
    const shown = el('output', { class: 'value', 'data-testid': TEST_IDS.smoothingValue });
    const showValue = (v: number) => (shown.textContent = v === 0 ? 'off' : v.toFixed(3).replace(/0+$/, '').replace(/\.$/, ''));
    showValue(values.smoothing);
    let frame = 0;
    slider.addEventListener('input', () => {
      const v = Number(slider.value);
      showValue(v);
      // coalesce slider moves into one redraw per animation frame
      cancelAnimationFrame(frame);
      frame = requestAnimationFrame(() => emit({ smoothing: v }));
    });

    const kind = el(
      'select',
      { 'data-testid': TEST_IDS.smoothingKind, 'aria-label': 'Smoothing kind', title: 'Smoothing kind' },
      el('option', { value: 'ema', text: 'EMA (TensorBoard)' }),
      el('option', { value: 'time', text: 'EMA by x distance' }),
    );
    kind.value = values.smoothingKind;
    kind.addEventListener('change', () => emit({ smoothingKind: kind.value as SmoothingKind }));

    const xMode = el(
      'select',
      { 'data-testid': TEST_IDS.xAxisSelect, 'aria-label': 'X axis', title: 'X axis' },
      el('option', { value: 'step', text: 'x: step' }),
      el('option', { value: 'time', text: 'x: wall time' }),
      el('option', { value: 'relative', text: 'x: relative time' }),
    );
    xMode.value = values.xMode;
    xMode.addEventListener('change', () => emit({ xMode: xMode.value as XMode }));

    const toggles = [
      toggle(TEST_IDS.logYToggle, 'log y', values.logY, 'Logarithmic y axis (values ≤ 0 are hidden)', (on) =>
        emit({ logY: on }),
      ),
      toggle(TEST_IDS.outliersToggle, 'ignore outliers', values.ignoreOutliers, 'Scale the y axis to the 1st–99th percentile', (on) =>
        emit({ ignoreOutliers: on }),
      ),
      toggle(
        TEST_IDS.envelopeToggle,
        'min/max band',
        values.showEnvelope,
        'While smoothing, shade the min/max of the raw points so spikes stay visible',
        (on) => emit({ showEnvelope: on }),
      ),
    ];

    this.live = el('span', { class: 'live', 'data-testid': TEST_IDS.liveStatus, 'data-state': 'offline', text: 'offline' });
    this.theme = el('button', { type: 'button', class: 'icon-button', 'data-testid': TEST_IDS.themeToggle, title: 'Light / dark' });
    this.theme.addEventListener('click', onToggleTheme);

    this.root = el(
      'header',
      { class: 'topbar' },
      el('a', { class: 'brand', href: './' }, el('span', { class: 'logo', 'aria-hidden': 'true' }), 'curvestream'),
      el('div', { class: 'controls' },
        el('label', { class: 'smoothing', title: 'Smoothing weight (0 = off)' }, 'smoothing', slider, shown),
        kind,
        xMode,
        ...toggles,
      ),
      el('span', { class: 'spacer' }),
      this.live,
      this.theme,
    );
  }

  setLive(state: LiveState): void {
    this.live.dataset.state = state;
    this.live.textContent = LIVE_TEXT[state];
  }

  setTheme(name: 'light' | 'dark'): void {
    this.theme.textContent = name === 'dark' ? '☀' : '☾';
  }
}
