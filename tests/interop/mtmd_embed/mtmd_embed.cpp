// What llama.cpp's multimodal runtime (libmtmd) makes of one image or audio
// clip: loads a text GGUF and an mmproj GGUF, tokenizes the media marker with
// the media, encodes every media chunk (mtmd_encode_chunk) and prints the
// projected embeddings (mtmd_get_output_embd) as JSON on stdout:
//   {"chunks": [{"type": "image", "n_tokens": N, "n_embd": E, "embd": [...]}, ...]}
// Everything llama.cpp logs goes to stderr. Used by tests/interop/mmproj_judge_test.ts
// and tests/testdata/multimodal/judge/make_mmproj_reference.py's checks.
//
// Usage: mtmd_embed TEXT.gguf MMPROJ.gguf image W H RGB_FILE   (W*H*3 bytes, row-major RGB)
//        mtmd_embed TEXT.gguf MMPROJ.gguf audio F32_FILE       (mono samples, little-endian float32)
// Exit 2 on bad arguments or input, 1 when llama.cpp fails.

#include "ggml-backend.h"
#include "llama.h"
#include "mtmd.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

static std::vector<unsigned char> read_file(const char * path) {
    std::vector<unsigned char> bytes;
    FILE * f = std::fopen(path, "rb");
    if (!f) {
        return bytes;
    }
    unsigned char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) {
        bytes.insert(bytes.end(), buf, buf + n);
    }
    std::fclose(f);
    return bytes;
}

static int usage() {
    std::fprintf(stderr,
                 "usage: mtmd_embed TEXT.gguf MMPROJ.gguf image W H RGB_FILE\n"
                 "       mtmd_embed TEXT.gguf MMPROJ.gguf audio F32_FILE\n");
    return 2;
}

int main(int argc, char ** argv) {
    if (argc < 5) {
        return usage();
    }
    const std::string kind = argv[3];
    mtmd_bitmap * bitmap = nullptr;
    if (kind == "image" && argc == 7) {
        const long nx = std::strtol(argv[4], nullptr, 10);
        const long ny = std::strtol(argv[5], nullptr, 10);
        const std::vector<unsigned char> rgb = read_file(argv[6]);
        if (nx <= 0 || ny <= 0 || nx > 4096 || ny > 4096 || rgb.size() != (size_t) (nx * ny * 3)) {
            std::fprintf(stderr, "%s: expected %ld x %ld x 3 bytes of RGB\n", argv[6], nx, ny);
            return 2;
        }
        bitmap = mtmd_bitmap_init((uint32_t) nx, (uint32_t) ny, rgb.data());
    } else if (kind == "audio" && argc == 5) {
        const std::vector<unsigned char> raw = read_file(argv[4]);
        if (raw.empty() || raw.size() % sizeof(float) != 0) {
            std::fprintf(stderr, "%s: expected float32 samples\n", argv[4]);
            return 2;
        }
        std::vector<float> samples(raw.size() / sizeof(float));
        std::memcpy(samples.data(), raw.data(), raw.size());
        bitmap = mtmd_bitmap_init_from_audio(samples.size(), samples.data());
    } else {
        return usage();
    }

    // The CPU backends of node-llama-cpp's prebuilt ggml are separate
    // libraries loaded at run time; MTMD_EMBED_BACKENDS names their folder.
    const char * backends = std::getenv("MTMD_EMBED_BACKENDS");
    if (backends && *backends) {
        ggml_backend_load_all_from_path(backends);
    } else {
        ggml_backend_load_all();
    }
    llama_backend_init();

    llama_model_params mparams = llama_model_default_params();
    mparams.n_gpu_layers = 0;
    llama_model * model = llama_model_load_from_file(argv[1], mparams);
    if (!model) {
        std::fprintf(stderr, "%s: llama.cpp cannot load the text model\n", argv[1]);
        return 1;
    }

    mtmd_context_params cparams = mtmd_context_params_default();
    cparams.use_gpu = false;
    cparams.print_timings = false;
    cparams.n_threads = 1;
    cparams.warmup = false;
    // Plain attention: flash attention computes in F16 on the CPU.
    cparams.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    mtmd_context * ctx = mtmd_init_from_file(argv[2], model, cparams);
    if (!ctx) {
        std::fprintf(stderr, "%s: llama.cpp cannot load the mmproj\n", argv[2]);
        return 1;
    }

    mtmd_input_text text;
    text.text = mtmd_get_marker(ctx);
    text.text_len = std::strlen(text.text);
    text.add_special = false;
    text.parse_special = true;
    mtmd_input_chunks * chunks = mtmd_input_chunks_init();
    const mtmd_bitmap * bitmaps[] = { bitmap };
    if (mtmd_tokenize(ctx, chunks, &text, bitmaps, 1) != 0) {
        std::fprintf(stderr, "mtmd_tokenize failed\n");
        return 1;
    }

    const int n_embd = llama_model_n_embd_inp(model);
    std::printf("{\"chunks\": [");
    bool first = true;
    for (size_t i = 0; i < mtmd_input_chunks_size(chunks); i++) {
        const mtmd_input_chunk * chunk = mtmd_input_chunks_get(chunks, i);
        const auto type = mtmd_input_chunk_get_type(chunk);
        if (type == MTMD_INPUT_CHUNK_TYPE_TEXT) {
            continue;
        }
        if (mtmd_encode_chunk(ctx, chunk) != 0) {
            std::fprintf(stderr, "mtmd_encode_chunk failed on chunk %zu\n", i);
            return 1;
        }
        const size_t n_tokens = mtmd_input_chunk_get_n_tokens(chunk);
        const float * embd = mtmd_get_output_embd(ctx);
        std::printf("%s{\"type\": \"%s\", \"n_tokens\": %zu, \"n_embd\": %d, \"embd\": [", first ? "" : ", ",
                    type == MTMD_INPUT_CHUNK_TYPE_AUDIO ? "audio" : "image", n_tokens, n_embd);
        for (size_t j = 0; j < n_tokens * (size_t) n_embd; j++) {
            std::printf(j ? ",%.9g" : "%.9g", embd[j]);
        }
        std::printf("]}");
        first = false;
    }
    std::printf("]}\n");

    mtmd_input_chunks_free(chunks);
    mtmd_bitmap_free(bitmap);
    mtmd_free(ctx);
    llama_model_free(model);
    return 0;
}
