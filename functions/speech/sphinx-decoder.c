/*
 * sphinx-decoder: PocketSphinx loaded once, decoding one WAV file per request, so that a worker pays the
 * model's start-up (about 0.7 s: language model, dictionary, acoustic model) once instead of per piece.
 *
 * Each request does what SphinxRecognizer did with two pocketsphinx_continuous processes, the same way:
 *   1. the front-end pass: a keyword search for one word of a one-word dictionary (the front end only),
 *      up to the live cepstral mean's first update, whose values (as PocketSphinx logs them, two
 *      decimals) become the decode's starting mean; the model's own when the pass finds no speech;
 *   2. the decode: pocketsphinx_continuous's loop over the file (-infile, -time yes), utterances ended
 *      where its voice activity detector turns from speech to silence, printing what it prints.
 * Before each request both decoders are put back as a fresh process has them (stream start, cepstral
 * mean at its start and no frames counted), so a request's output does not depend on the ones before.
 *
 * Protocol: arguments are PocketSphinx options (as pocketsphinx_continuous takes them). stdin: one WAV
 * file path per line (16 kHz mono 16-bit PCM, 44-byte header). stdout per request: the decode's output,
 * then a line "#end" (no dictionary word starts with '#'), or "#error MESSAGE" when the file cannot be
 * read. It exits at the end of stdin.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pocketsphinx.h>
#include <sphinxbase/cmn.h>
#include <sphinxbase/err.h>
#include <sphinxbase/feat.h>

static const arg_t decoder_args[] = {POCKETSPHINX_OPTIONS, CMDLN_EMPTY_OPTION};

#define FRONT_END_PASS_WORD "hello"
#define FRONT_END_PASS_DICTIONARY FRONT_END_PASS_WORD " HH AH L OW\n"
#define BLOCK_SAMPLES 2048
#define WAV_HEADER_BYTES 44

typedef struct {
    ps_decoder_t *ps;
    cmn_t *cmn;
    mfcc_t *initial_mean;
} decoder_t;

static int decoder_init(decoder_t *decoder, cmd_ln_t *config)
{
    decoder->ps = ps_init(config);
    if (decoder->ps == NULL)
        return -1;
    decoder->cmn = ps_get_feat(decoder->ps)->cmn_struct;
    decoder->initial_mean = calloc(decoder->cmn->veclen, sizeof(mfcc_t));
    memcpy(decoder->initial_mean, decoder->cmn->cmn_mean, decoder->cmn->veclen * sizeof(mfcc_t));
    return 0;
}

/* As ps_init leaves it: the stream's clock and noise statistics reset, the live mean at `mean`. */
static void decoder_reset(decoder_t *decoder, mfcc_t const *mean)
{
    int i;
    ps_start_stream(decoder->ps);
    for (i = 0; i < decoder->cmn->veclen; i++) {
        decoder->cmn->cmn_mean[i] = mean[i];
        decoder->cmn->sum[i] = 0;
    }
    decoder->cmn->nframe = 0;
}

/*
 * Whether the live mean has moved from `mean` (the start it was given); if so, `mean` takes its values
 * rounded as PocketSphinx logs them ("%5.2f"), which is what the two-process decode read from the log.
 */
static int take_update(decoder_t *decoder, mfcc_t *mean)
{
    int i;
    char text[32];
    if (memcmp(mean, decoder->cmn->cmn_mean, decoder->cmn->veclen * sizeof(mfcc_t)) == 0)
        return 0;
    for (i = 0; i < decoder->cmn->veclen; i++) {
        snprintf(text, sizeof text, "%5.2f", MFCC2FLOAT(decoder->cmn->cmn_mean[i]));
        mean[i] = FLOAT2MFCC(atof(text));
    }
    return 1;
}

/* Opens a WAV file and checks its header as pocketsphinx_continuous does; NULL and a message if not. */
static FILE *open_wav(char const *path, int sample_rate, char const **problem)
{
    unsigned char header[WAV_HEADER_BYTES];
    int rate;
    FILE *file = fopen(path, "rb");
    if (file == NULL) {
        *problem = strerror(errno);
        return NULL;
    }
    if (fread(header, 1, WAV_HEADER_BYTES, file) != WAV_HEADER_BYTES) {
        *problem = "shorter than a WAV header";
    } else if (header[34] != 16 || header[20] != 1 || header[22] != 1) {
        *problem = "not 16-bit mono PCM";
    } else {
        rate = header[24] | (header[25] << 8) | (header[26] << 16) | (header[27] << 24);
        if (rate == sample_rate)
            return file;
        *problem = "not at the decoder's sample rate";
    }
    fclose(file);
    return NULL;
}

/*
 * The front-end pass: the live mean's first update, taken the moment it happens (the two-process decode
 * stopped the pass at the log line it printed); the model's mean if the whole file brings none.
 */
static void first_mean(decoder_t *pass, FILE *file, mfcc_t *mean)
{
    int16 block[BLOCK_SAMPLES];
    size_t count;
    int in_speech, started = 0, updated = 0;

    decoder_reset(pass, pass->initial_mean);
    memcpy(mean, pass->initial_mean, pass->cmn->veclen * sizeof(mfcc_t));
    ps_start_utt(pass->ps);
    while (!updated && (count = fread(block, sizeof(int16), BLOCK_SAMPLES, file)) > 0) {
        ps_process_raw(pass->ps, block, count, FALSE, FALSE);
        updated = take_update(pass, mean);
        in_speech = ps_get_in_speech(pass->ps);
        if (in_speech && !started)
            started = 1;
        if (!updated && !in_speech && started) {
            ps_end_utt(pass->ps);
            updated = take_update(pass, mean);
            ps_start_utt(pass->ps);
            started = 0;
        }
    }
    ps_end_utt(pass->ps);
    if (!updated)
        take_update(pass, mean);
}

static void print_word_times(ps_decoder_t *ps, int frame_rate)
{
    ps_seg_t *iter = ps_seg_iter(ps);
    while (iter != NULL) {
        int32 sf, ef, pprob;
        float conf;
        ps_seg_frames(iter, &sf, &ef);
        pprob = ps_seg_prob(iter, NULL, NULL, NULL);
        conf = logmath_exp(ps_get_logmath(ps), pprob);
        printf("%s %.3f %.3f %f\n", ps_seg_word(iter), ((float)sf / frame_rate), ((float)ef / frame_rate),
               conf);
        iter = ps_seg_next(iter);
    }
}

/* pocketsphinx_continuous's recognize_from_file, with -time yes. */
static void decode(decoder_t *decoder, FILE *file, mfcc_t const *mean, int frame_rate)
{
    int16 block[BLOCK_SAMPLES];
    size_t count;
    int in_speech, started = 0;
    char const *hyp;

    decoder_reset(decoder, mean);
    ps_start_utt(decoder->ps);
    while ((count = fread(block, sizeof(int16), BLOCK_SAMPLES, file)) > 0) {
        ps_process_raw(decoder->ps, block, count, FALSE, FALSE);
        in_speech = ps_get_in_speech(decoder->ps);
        if (in_speech && !started)
            started = 1;
        if (!in_speech && started) {
            ps_end_utt(decoder->ps);
            hyp = ps_get_hyp(decoder->ps, NULL);
            if (hyp != NULL)
                printf("%s\n", hyp);
            print_word_times(decoder->ps, frame_rate);
            ps_start_utt(decoder->ps);
            started = 0;
        }
    }
    ps_end_utt(decoder->ps);
    if (started) {
        hyp = ps_get_hyp(decoder->ps, NULL);
        if (hyp != NULL) {
            printf("%s\n", hyp);
            print_word_times(decoder->ps, frame_rate);
        }
    }
}

/* The options given, or PocketSphinx's defaults when there are none (cmd_ln_parse_r refuses none). */
static cmd_ln_t *parse_options(int argc, char *argv[])
{
    return argc > 1 ? cmd_ln_parse_r(NULL, decoder_args, argc, argv, TRUE)
                    : cmd_ln_init(NULL, decoder_args, TRUE, NULL);
}

static int fail(char const *message)
{
    fprintf(stderr, "sphinx-decoder: %s\n", message);
    return 2;
}

int main(int argc, char *argv[])
{
    decoder_t decoder, pass;
    cmd_ln_t *config, *pass_config;
    char dictionary[4096];
    char const *temporary = getenv("TMPDIR");
    char *line = NULL;
    size_t capacity = 0;
    ssize_t length;
    int fd, loaded, sample_rate, frame_rate;
    mfcc_t *mean;

    config = parse_options(argc, argv);
    if (config == NULL)
        return fail("its options are not PocketSphinx's");
    ps_default_search_args(config);
    if (decoder_init(&decoder, config) < 0)
        return fail("PocketSphinx could not load its model");

    /* The pass's decoder: the same options, with a one-word dictionary and a keyword search. */
    snprintf(dictionary, sizeof dictionary, "%s/sphinx-decoder-XXXXXX", temporary ? temporary : "/tmp");
    fd = mkstemp(dictionary);
    if (fd < 0 || write(fd, FRONT_END_PASS_DICTIONARY, strlen(FRONT_END_PASS_DICTIONARY)) < 0)
        return fail("the front-end pass's dictionary could not be written");
    close(fd);
    pass_config = parse_options(argc, argv);
    cmd_ln_set_str_r(pass_config, "-dict", dictionary);
    cmd_ln_set_str_r(pass_config, "-keyphrase", FRONT_END_PASS_WORD);
    cmd_ln_set_str_r(pass_config, "-lm", NULL);
    ps_default_search_args(pass_config);
    loaded = decoder_init(&pass, pass_config);
    unlink(dictionary);
    if (loaded < 0)
        return fail("PocketSphinx could not load the front-end pass");

    sample_rate = (int)cmd_ln_float32_r(config, "-samprate");
    frame_rate = cmd_ln_int32_r(config, "-frate");
    mean = calloc(decoder.cmn->veclen, sizeof(mfcc_t));
    while ((length = getline(&line, &capacity, stdin)) > 0) {
        char const *problem = NULL;
        FILE *file;
        if (line[length - 1] == '\n')
            line[length - 1] = '\0';
        file = open_wav(line, sample_rate, &problem);
        if (file == NULL) {
            printf("#error %s\n", problem);
        } else {
            first_mean(&pass, file, mean);
            fseek(file, WAV_HEADER_BYTES, SEEK_SET);
            decode(&decoder, file, mean, frame_rate);
            fclose(file);
            printf("#end\n");
        }
        fflush(stdout);
    }
    return 0;
}
