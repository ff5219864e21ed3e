/**
 * @module Video frames in the browser (`:from_video`, spec 4.2): the MP4 demuxed by mp4box
 * (GPAC's MP4Box.js, BSD-3-Clause) and decoded by WebCodecs' VideoDecoder, in a page or a worker.
 * The Node runner has no WebCodecs, so only runners where `hasWebCodecs()` offer the stage.
 *
 * Each decoded frame is offered to `wants(t)` (its presentation time in seconds); a wanted frame
 * is drawn to RGBA and handed to `take`, in order; the others are closed at once. Samples are fed
 * to the decoder only while fewer than a few wanted frames wait, so memory stays bounded.
 */
import { DataStream, Endianness, MP4BoxBuffer, type Sample, createFile } from "mp4box";
import type { DecodedImage } from "../stages/extract";

export interface VideoInfo {
  codec: string;
  width: number;
  height: number;
  duration_seconds: number;
}

/** Hands out the frames the caller wants; answers the video's facts once every frame was decoded (or `take` said stop). */
export type VideoFrames = (
  bytes: Uint8Array,
  wants: (t: number) => boolean,
  take: (frame: DecodedImage, t: number) => Promise<boolean>,
  info?: (info: VideoInfo) => void,
) => Promise<VideoInfo>;

export const hasWebCodecs = () => typeof VideoDecoder !== "undefined" && typeof OffscreenCanvas !== "undefined";

/** A malformed or unsupported video; the message says why. */
export class VideoError extends Error {}

const WAITING_MAX = 3;

interface Demuxed {
  info: VideoInfo;
  config: VideoDecoderConfig;
  samples: Sample[];
  /** Seconds to add to a sample's media time (cts) for its presentation time: the track's edit list. */
  shift: number;
}

/**
 * The presentation shift of a track's edit list (ISO 14496-12 8.6.6): leading empty edits delay
 * the track, and the first media edit starts it at `media_time`. Encoders that reorder frames
 * (H.264 and HEVC with B-frames, as phones and ffmpeg's libx264 write them) start the media at the
 * first frame's composition offset and cut that off with such an edit, so without it every frame
 * would be late by a frame or two.
 */
function editShift(edits: { segment_duration: number; media_time: number }[], movieTimescale: number, timescale: number): number {
  let delay = 0;
  for (const e of edits) {
    if (e.media_time === -1) delay += e.segment_duration / movieTimescale;
    else return delay - e.media_time / timescale;
  }
  return delay;
}

function demux(bytes: Uint8Array): Demuxed {
  const file = createFile();
  let ready: Demuxed | null = null;
  let error: string | null = null;
  file.onError = (_module: string, message: string) => (error = message);
  file.onReady = (movie) => {
    const track = movie.videoTracks[0];
    if (!track) return void (error = "the file holds no video track");
    const trak = file.getTrackById(track.id);
    let description: Uint8Array | undefined;
    for (const entry of trak.mdia.minf.stbl.stsd.entries as unknown as Record<string, { write(s: DataStream): void } | undefined>[]) {
      const box = entry.avcC ?? entry.hvcC ?? entry.vpcC ?? entry.av1C;
      if (!box) continue;
      const stream = new DataStream(undefined, 0, Endianness.BIG_ENDIAN);
      box.write(stream);
      description = new Uint8Array(stream.buffer, 8); // without the box header
      break;
    }
    const width = track.video?.width ?? track.track_width;
    const height = track.video?.height ?? track.track_height;
    const edits = trak.edts?.elst?.entries ?? [];
    ready = {
      info: {
        codec: track.codec,
        width,
        height,
        // The presented duration (the edit list's, in the movie's timescale) where the file states one.
        duration_seconds: track.movie_duration > 0 ? track.movie_duration / track.movie_timescale : track.duration / track.timescale,
      },
      config: { codec: track.codec, codedWidth: width, codedHeight: height, ...(description ? { description } : {}) },
      samples: [],
      shift: editShift(edits, track.movie_timescale, track.timescale),
    };
    file.setExtractionOptions(track.id, null, { nbSamples: Infinity });
    file.start();
  };
  file.onSamples = (_id, _user, samples) => ready?.samples.push(...samples);
  const buffer = MP4BoxBuffer.fromArrayBuffer(bytes.slice().buffer, 0);
  file.appendBuffer(buffer, true);
  file.flush();
  if (error || !ready) throw new VideoError(`not a readable MP4 video: ${error ?? "no movie header (moov) found"}`);
  return ready;
}

export const decodeVideoInBrowser: VideoFrames = async (bytes, wants, take, onInfo) => {
  const { info, config, samples, shift } = demux(bytes);
  onInfo?.(info);
  const support = await VideoDecoder.isConfigSupported(config).catch(() => ({ supported: false }));
  if (!support.supported) throw new VideoError(`this browser's WebCodecs cannot decode ${info.codec} (${info.width}x${info.height})`);
  const canvas = new OffscreenCanvas(info.width, info.height);
  const ctx2d = canvas.getContext("2d", { willReadFrequently: true });
  if (!ctx2d) throw new Error("video: no 2D context for OffscreenCanvas");
  const waiting: { frame: DecodedImage; t: number }[] = [];
  let failure: Error | null = null;
  let stopped = false;
  let wake: (() => void) | null = null;
  const poke = () => {
    wake?.();
    wake = null;
  };
  const decoder = new VideoDecoder({
    output: (frame) => {
      const t = frame.timestamp / 1e6;
      if (!stopped && wants(t)) {
        ctx2d.drawImage(frame, 0, 0, info.width, info.height);
        const rgba = ctx2d.getImageData(0, 0, info.width, info.height).data;
        waiting.push({ frame: { data: rgba, width: info.width, height: info.height, channels: 4 }, t });
      }
      frame.close();
      poke();
    },
    error: (e) => {
      failure = new VideoError(`decoding failed: ${e.message}`);
      poke();
    },
  });
  decoder.configure(config);
  const drain = async () => {
    while (waiting.length > 0 && !stopped) {
      const { frame, t } = waiting.shift()!;
      if (!(await take(frame, t))) stopped = true;
    }
  };
  try {
    for (const s of samples) {
      if (stopped) break;
      if (failure) throw failure;
      decoder.decode(
        new EncodedVideoChunk({
          type: s.is_sync ? "key" : "delta",
          // Presentation time; frames before the edit's start (negative) are pre-roll that `wants` never takes.
          timestamp: Math.round((s.cts / s.timescale + shift) * 1e6),
          duration: (s.duration * 1e6) / s.timescale,
          data: s.data!,
        }),
      );
      await drain();
      while (!stopped && !failure && (waiting.length >= WAITING_MAX || decoder.decodeQueueSize > WAITING_MAX)) {
        await new Promise<void>((r) => {
          wake = r;
          setTimeout(r, 50);
        });
        await drain();
      }
    }
    if (!stopped && !failure) await decoder.flush();
    if (failure) throw failure;
    await drain();
  } finally {
    if (decoder.state !== "closed") decoder.close();
  }
  return info;
};
