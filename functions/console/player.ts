/**
 * Listening while reading: the job's audio (a short-lived presigned GET from the API, renewed when it
 * runs out), the word being spoken highlighted and followed by the scroll, every word a button that
 * plays from it, turn by turn skipping, playback speed, and the speaker timeline.
 */
import type { AudioDownload } from '#core/audio-download';
import { groupTurns, speakerTurns, type TranscriptResult } from '#core/result';
import { requestJson } from './api.ts';
import { button, formatDuration, formatPosition, formatTime, make, reducedMotion } from './dom.ts';
import { drawTimeline, speakerLabel } from './timeline.ts';

const SPEEDS = [0.75, 1, 1.25, 1.5, 2];
/** "Previous turn" goes to the start of the current turn unless it began less than this ago. */
const RESTART_TURN_MS = 1500;
/** A failed load asks for a new URL (it may have expired) at most this often. */
const RENEW_AFTER_MS = 30_000;

/** The last word that started at or before `ms` (words are in spoken order), or -1. */
export function wordIndexAt(starts: number[], ms: number): number {
  let low = 0;
  let high = starts.length - 1;
  let found = -1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    if ((starts[middle] ?? 0) <= ms) {
      found = middle;
      low = middle + 1;
    } else high = middle - 1;
  }
  return found;
}

export interface Player {
  /** Everything the job view shows of the result below its facts: player, timeline, transcript. */
  sections: Node[];
  destroy(): void;
}

export function createPlayer(jobId: string, result: TranscriptResult): Player {
  const words = result.words;
  const starts = words.map((word) => word.startTime);
  const turns = speakerTurns(words);
  const turnStarts = turns.map((turn) => turn.startTime).sort((a, b) => a - b);
  const durationMs = Math.max(result.audio_duration_ms, words.at(-1)?.endTime ?? 0);

  const audio = make('audio');
  audio.preload = 'metadata';
  const playButton = button('Play', () => toggle());
  playButton.setAttribute('aria-keyshortcuts', 'k Space');
  const previous = button('Previous turn', () => skipTurn(-1), 'secondary');
  previous.setAttribute('aria-keyshortcuts', 'j');
  const next = button('Next turn', () => skipTurn(1), 'secondary');
  next.setAttribute('aria-keyshortcuts', 'l');
  const position = make('input', { id: 'position' });
  position.type = 'range';
  position.min = '0';
  position.max = String(durationMs / 1000);
  position.step = '0.1';
  position.value = '0';
  position.addEventListener('input', () => seek(Number(position.value) * 1000, { play: false }));
  const clock = make('span', { className: 'clock', text: `0:00 / ${formatDuration(durationMs)}` });
  clock.setAttribute('aria-hidden', 'true');
  const speed = make('select', { id: 'speed' });
  for (const rate of SPEEDS) {
    const option = make('option', { text: `${rate}×` });
    option.value = String(rate);
    option.selected = rate === 1;
    speed.append(option);
  }
  speed.addEventListener('change', () => {
    // The default too: a new URL (a renewal) loads the element again, which resets the rate to it.
    audio.defaultPlaybackRate = Number(speed.value);
    audio.playbackRate = Number(speed.value);
  });
  const follow = make('input', { id: 'follow' });
  follow.type = 'checkbox';
  follow.checked = true;
  const notice = make('p', { className: 'player-notice' });
  notice.setAttribute('role', 'status');

  const label = (target: HTMLElement, text: string) => {
    const node = make('label', { text });
    node.htmlFor = target.id;
    return node;
  };
  const controls = make('section', { className: 'player', id: 'player' }, [
    make('h3', { text: 'Listen', className: 'visually-hidden', id: 'player-title' }),
    make('div', { className: 'player-row' }, [previous, playButton, next, clock]),
    make('div', { className: 'player-row' }, [
      make('span', { className: 'position' }, [label(position, 'Position'), position]),
      make('span', { className: 'inline-field' }, [label(speed, 'Speed'), speed]),
      make('span', { className: 'inline-field check' }, [follow, label(follow, 'Follow along')]),
    ]),
    make('p', {
      className: 'hint',
      text: 'Keys: K or Space play and pause, J and L skip to the previous and next turn; in the transcript, arrow keys move between words and Enter plays from one.',
    }),
    notice,
    audio,
  ]);
  controls.setAttribute('aria-labelledby', 'player-title');

  // The transcript: turns of words, each word a button that plays from its start. One word at a time is
  // in the tab order (arrow keys move between them), so that the page is not thousands of tab stops.
  const buttons: HTMLButtonElement[] = [];
  const paragraphs = groupTurns(words).map((turn) => {
    const spoken = turn.words.flatMap((word, offset) => {
      const index = buttons.length;
      const wordButton = button(word.word, () => seek(word.startTime, { play: true }), 'word');
      wordButton.dataset.index = String(index);
      wordButton.title = `${formatTime(word.startTime)} – ${formatTime(word.endTime)}`;
      wordButton.tabIndex = index === 0 ? 0 : -1;
      buttons.push(wordButton);
      return offset === 0 ? [wordButton] : [' ', wordButton];
    });
    const who = speakerLabel(turn);
    return make('p', { className: 'turn' }, [
      ...(who ? [make('span', { text: who, className: 'speaker' }), ' '] : []),
      make('time', { text: formatTime(turn.words[0]?.startTime ?? 0), className: 'turn-time' }),
      ' ',
      ...spoken,
    ]);
  });
  const transcript = make('section', { className: 'transcript' }, [
    make('h3', { text: 'Transcript' }),
    ...(words.length === 0
      ? [make('p', { text: 'No speech was found in this recording.' })]
      : [make('div', { className: 'words' }, paragraphs)]),
  ]);
  transcript.addEventListener('keydown', (event) => {
    const target = event.target as HTMLElement;
    if (!target.classList.contains('word')) return;
    const index = Number(target.dataset.index);
    const moves: Record<string, number> = {
      ArrowRight: index + 1,
      ArrowLeft: index - 1,
      Home: 0,
      End: buttons.length - 1,
    };
    const to = moves[event.key];
    if (to === undefined) return;
    event.preventDefault();
    focusWord(Math.max(0, Math.min(buttons.length - 1, to)));
  });

  const timeline = drawTimeline(turns, durationMs, (ms) => seek(ms, { play: true }));

  let current = -1;
  let frame = 0;
  let renewedAt = 0;
  let destroyed = false;

  function focusWord(index: number): void {
    for (const other of buttons) if (other.tabIndex === 0) other.tabIndex = -1;
    const target = buttons[index];
    if (!target) return;
    target.tabIndex = 0;
    target.focus();
  }

  /**
   * Highlights the word at `index`; `reveal` scrolls it into view when the highlight moves (while
   * playing) or always (a seek the reader asked for), if the reader follows along.
   */
  function setCurrent(index: number, reveal: 'always' | 'on-change' | 'never'): void {
    const moved = index !== current;
    if (moved) {
      buttons[current]?.classList.remove('current');
      buttons[index]?.classList.add('current');
      current = index;
    }
    const word = buttons[index];
    if (word && follow.checked && (reveal === 'always' || (reveal === 'on-change' && moved)))
      keepInView(word);
  }

  /** Scrolls the word into view when it is not; a glide unless the reader asked for less motion. */
  function keepInView(word: HTMLElement): void {
    const box = word.getBoundingClientRect();
    const top = controls.getBoundingClientRect().bottom;
    if (box.top >= top && box.bottom <= window.innerHeight) return;
    word.scrollIntoView({ block: 'center', behavior: reducedMotion() ? 'instant' : 'smooth' });
  }

  function show(ms: number, reveal: 'always' | 'on-change' | 'never'): void {
    setCurrent(wordIndexAt(starts, ms), reveal);
    if (document.activeElement !== position) position.value = String(ms / 1000);
    position.setAttribute('aria-valuetext', `${formatPosition(ms)} of ${formatDuration(durationMs)}`);
    clock.textContent = `${formatPosition(ms)} / ${formatDuration(durationMs)}`;
    timeline?.showPosition(ms);
  }

  const tick = () => {
    show(audio.currentTime * 1000, audio.paused ? 'never' : 'on-change');
    frame = audio.paused ? 0 : requestAnimationFrame(tick);
  };

  function seek(ms: number, { play }: { play: boolean }): void {
    audio.currentTime = ms / 1000;
    // At once, not at the next frame: the word and the scroll follow the click.
    show(ms, 'always');
    if (play) void start();
  }

  async function start(): Promise<void> {
    try {
      await audio.play();
    } catch (error) {
      // A pause before playing began is no failure; anything else is said.
      if ((error as Error).name !== 'AbortError')
        notice.textContent = `Cannot play: ${(error as Error).message}`;
    }
  }

  function toggle(): void {
    if (audio.paused) void start();
    else audio.pause();
  }

  function skipTurn(direction: 1 | -1): void {
    const now = audio.currentTime * 1000;
    const target =
      direction === 1
        ? turnStarts.find((start) => start > now + 1)
        : ([...turnStarts].reverse().find((start) => start < now - RESTART_TURN_MS) ?? 0);
    if (target !== undefined) seek(target, { play: !audio.paused });
  }

  async function load(resumeAt?: number): Promise<void> {
    try {
      const { download_url } = await requestJson<AudioDownload>('v1-beta/transcript/audio', { id: jobId });
      if (destroyed) return;
      const wasPlaying = !audio.paused;
      audio.src = download_url;
      if (resumeAt !== undefined) {
        audio.currentTime = resumeAt / 1000;
        if (wasPlaying) void start();
      }
      notice.textContent = '';
    } catch (error) {
      notice.textContent = `The recording cannot be played: ${(error as Error).message}`;
      for (const control of [playButton, previous, next, position]) control.disabled = true;
    }
  }

  audio.addEventListener('play', () => {
    playButton.textContent = 'Pause';
    cancelAnimationFrame(frame);
    frame = requestAnimationFrame(tick);
  });
  audio.addEventListener('pause', () => {
    playButton.textContent = 'Play';
    tick();
  });
  audio.addEventListener('seeked', tick);
  audio.addEventListener('error', () => {
    if (destroyed) return;
    // A URL that ran out (the player outlived it) gets a new one, at the same place.
    if (Date.now() - renewedAt > RENEW_AFTER_MS) {
      renewedAt = Date.now();
      void load(audio.currentTime * 1000);
      return;
    }
    const unsupported = audio.error?.code === MediaError.MEDIA_ERR_SRC_NOT_SUPPORTED;
    notice.textContent = unsupported
      ? 'This browser cannot play this recording’s format; the transcript and downloads are still here.'
      : `The recording could not be loaded (${audio.error?.message || 'network error'}).`;
  });

  const onKey = (event: KeyboardEvent) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target as HTMLElement;
    if (target.closest('input, select, textarea, dialog[open]')) return;
    const key = event.key.toLowerCase();
    if (key === 'k' || (key === ' ' && !target.closest('button, a, summary'))) toggle();
    else if (key === 'j') skipTurn(-1);
    else if (key === 'l') skipTurn(1);
    else return;
    event.preventDefault();
  };
  document.addEventListener('keydown', onKey);
  renewedAt = Date.now();
  void load();

  return {
    sections: [controls, ...(timeline ? [timeline.element] : []), transcript],
    destroy() {
      destroyed = true;
      document.removeEventListener('keydown', onKey);
      cancelAnimationFrame(frame);
      audio.pause();
      audio.removeAttribute('src');
      audio.load();
    },
  };
}
