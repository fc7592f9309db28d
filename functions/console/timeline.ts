/**
 * The speaker timeline: one lane per speaker (or channel) across the audio's length, each turn a bar
 * that seeks to the turn when clicked, and each speaker's share of the talk time. Plain SVG, drawn
 * here: no library, no request.
 */
import type { Utterance } from '#core/result';
import { formatDuration, formatPosition, make, makeSvg } from './dom.ts';

/** Speaker colours (CSS classes `speaker-0` …), repeated past this many speakers. */
export const SPEAKER_COLOURS = 8;

export interface Lane {
  /** `S1`, `S1 · channel 1`, or `channel 2` when only channels are known. */
  label: string;
  /** Indexes into the turns given. */
  turns: number[];
  talkMs: number;
  /** Of all talk time, 0..1. */
  share: number;
}

/** The speaker or channel a turn is of, as a lane names it; undefined when neither is known. */
export function speakerLabel(turn: Pick<Utterance, 'speaker' | 'channel'>): string | undefined {
  const parts = [turn.speaker, turn.channel !== undefined ? `channel ${turn.channel}` : undefined];
  const label = parts.filter(Boolean).join(' · ');
  return label || undefined;
}

/** One lane per speaker or channel, in order of first appearance, with its talk time and share. */
export function timelineLanes(turns: Utterance[]): Lane[] {
  const lanes = new Map<string, Lane>();
  turns.forEach((turn, index) => {
    const label = speakerLabel(turn);
    if (!label) return;
    const lane = lanes.get(label) ?? { label, turns: [], talkMs: 0, share: 0 };
    lane.turns.push(index);
    lane.talkMs += Math.max(0, turn.endTime - turn.startTime);
    lanes.set(label, lane);
  });
  const total = [...lanes.values()].reduce((sum, lane) => sum + lane.talkMs, 0);
  for (const lane of lanes.values()) lane.share = total > 0 ? lane.talkMs / total : 0;
  return [...lanes.values()];
}

/** Whole percentages that add up to 100 (largest remainders), so that the legend never shows 99 or 101. */
export function wholePercentages(shares: number[]): number[] {
  const exact = shares.map((share) => share * 100);
  const floors = exact.map(Math.floor);
  const total = shares.reduce((sum, share) => sum + share, 0);
  let missing = total > 0 ? 100 - floors.reduce((sum, value) => sum + value, 0) : 0;
  const order = exact
    .map((value, index) => ({ index, remainder: value - Math.floor(value) }))
    .sort((a, b) => b.remainder - a.remainder);
  for (const { index } of order) {
    if (missing <= 0) break;
    floors[index] = (floors[index] ?? 0) + 1;
    missing -= 1;
  }
  return floors;
}

export interface Timeline {
  element: HTMLElement;
  /** Moves the playhead. */
  showPosition(ms: number): void;
}

/**
 * Draws the lanes. Bars are for the pointer (clicking one seeks to its turn); keyboard users skip by
 * turn with the player's controls, and the shares are text.
 */
export function drawTimeline(
  turns: Utterance[],
  durationMs: number,
  seek: (ms: number) => void,
): Timeline | undefined {
  const lanes = timelineLanes(turns);
  if (lanes.length === 0) return undefined;
  const length = Math.max(durationMs, ...turns.map((turn) => turn.endTime), 1);
  // A turn shorter than this still shows as a bar.
  const shortest = length / 400;
  const percentages = wholePercentages(lanes.map((lane) => lane.share));
  const playheads: SVGLineElement[] = [];
  const rows = lanes.map((lane, laneIndex) => {
    const colour = `speaker-${laneIndex % SPEAKER_COLOURS}`;
    const bars = makeSvg('svg', {
      class: 'lane-bars',
      viewBox: `0 0 ${length} 10`,
      preserveAspectRatio: 'none',
      'aria-hidden': 'true',
    });
    for (const index of lane.turns) {
      const turn = turns[index];
      if (!turn) continue;
      const bar = makeSvg('rect', {
        class: `bar ${colour}`,
        x: turn.startTime,
        y: 1,
        width: Math.max(shortest, turn.endTime - turn.startTime),
        height: 8,
        'data-turn': index,
      });
      const title = makeSvg('title');
      title.textContent = `${lane.label}, ${formatPosition(turn.startTime)}–${formatPosition(turn.endTime)}`;
      bar.append(title);
      bar.addEventListener('click', () => seek(turn.startTime));
      bars.append(bar);
    }
    const playhead = makeSvg('line', { class: 'playhead', x1: 0, x2: 0, y1: 0, y2: 10 });
    playheads.push(playhead);
    bars.append(playhead);
    const share = `${formatDuration(lane.talkMs)} · ${percentages[laneIndex]}%`;
    return make('li', { className: 'lane' }, [
      make('span', { className: 'lane-label' }, [
        make('span', { className: `swatch ${colour}` }),
        make('span', { className: 'lane-name', text: lane.label }),
        make('span', { className: 'share', text: share, title: 'Talk time and share of all talk' }),
      ]),
      bars,
    ]);
  });
  const element = make('section', { className: 'timeline' }, [
    make('h3', { text: 'Speakers', id: 'timeline-title' }),
    make('p', {
      className: 'hint',
      text: 'Talk time and share of each speaker; click a bar to play that turn.',
    }),
    make('ol', { className: 'lanes' }, rows),
  ]);
  element.setAttribute('aria-labelledby', 'timeline-title');
  return {
    element,
    showPosition(ms) {
      for (const playhead of playheads) {
        playhead.setAttribute('x1', String(ms));
        playhead.setAttribute('x2', String(ms));
      }
    },
  };
}
