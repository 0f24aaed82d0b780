# nomic-bert with MoE layers (nomic-embed-text-v2-moe's `NomicBertModel`) as remote code for the
# `nomic-moe-embed` fixture (tests/testdata/embeddings/README.md; make_embeddings.py loads it from here).
#
# Written for aprkit's tests after nomic-ai/nomic-bert-2048's modeling_hf_nomic_bert.py (Apache-2.0;
# nomic-ai/contrastors, src/contrastors/models/huggingface/), which nomic-embed-text-v2-moe loads with
# trust_remote_code and which is not reachable where the fixtures are made, and after vLLM's port of its
# MoE layer (NomicRouter, NomicExpertMLP, NomicExperts): the same config fields, module tree and tensor
# names, and the same computation for the configuration nomic-embed-text-v2-moe uses (prenorm false,
# activation_function "gelu", Q/K/V and MLP biases, rotary_emb_fraction 1, not interleaved):
#
# - embeddings: word + token type (no position embeddings: RoPE), then `emb_ln`;
# - attention: the fused `attn.Wqkv` (with bias) split into Q, K, V of n_head heads, NeoX RoPE (the two
#   halves of each head rotated, base rotary_emb_base) on Q and K, softmax(QKᵀ/√d)V, `attn.out_proj`;
#   then `norm1` of that plus the layer's input;
# - feed-forward, in layer i with moe_every_n_layers > 0 and i % moe_every_n_layers == 1: the MoE layer
#   (`mlp.router.layer`, no bias: softmax over num_experts, the moe_top_k largest kept, not renormalised;
#   each chosen expert e computes gelu(x·w1[e]ᵀ)·w2[e] with `mlp.experts.mlp.w1`/`w2` of shape
#   [num_experts × n_inner, n_embd]; their sum weighted by the router's probabilities, plus
#   `mlp.experts.bias`); elsewhere `mlp.fc2(gelu(mlp.fc1(x)))`, both with biases; then `norm2` of that
#   plus its input. GELU is erf's (F.gelu).
#
# Only the forward pass a sentence embedder runs is kept (no dropout, pooler, heads or flash-attention).

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import BaseModelOutputWithPooling


class NomicBertConfig(PretrainedConfig):
    model_type = "nomic_bert"

    def __init__(self, vocab_size=250048, n_embd=768, n_layer=12, n_head=12, n_inner=3072, n_positions=2048,
                 max_trained_positions=2048, activation_function="gelu", layer_norm_epsilon=1e-5,
                 type_vocab_size=1, rotary_emb_base=10000, rotary_emb_fraction=1.0, rotary_emb_interleaved=False,
                 rotary_emb_scale_base=None, rotary_scaling_factor=None, qkv_proj_bias=True, mlp_fc1_bias=True,
                 mlp_fc2_bias=True, prenorm=False, causal=False, moe_every_n_layers=2, moe_top_k=2,
                 num_experts=8, num_shared_experts=0, moe_normalize_expert_weights=False, use_rms_norm=None,
                 parallel_block=False, pad_token_id=1, **kwargs):
        super().__init__(pad_token_id=pad_token_id, **kwargs)
        self.vocab_size = vocab_size
        self.n_embd = n_embd
        self.n_layer = n_layer
        self.n_head = n_head
        self.n_inner = n_inner
        self.n_positions = n_positions
        self.max_trained_positions = max_trained_positions
        self.activation_function = activation_function
        self.layer_norm_epsilon = layer_norm_epsilon
        self.type_vocab_size = type_vocab_size
        self.rotary_emb_base = rotary_emb_base
        self.rotary_emb_fraction = rotary_emb_fraction
        self.rotary_emb_interleaved = rotary_emb_interleaved
        self.rotary_emb_scale_base = rotary_emb_scale_base
        self.rotary_scaling_factor = rotary_scaling_factor
        self.qkv_proj_bias = qkv_proj_bias
        self.mlp_fc1_bias = mlp_fc1_bias
        self.mlp_fc2_bias = mlp_fc2_bias
        self.prenorm = prenorm
        self.causal = causal
        self.moe_every_n_layers = moe_every_n_layers
        self.moe_top_k = moe_top_k
        self.num_experts = num_experts
        self.num_shared_experts = num_shared_experts
        self.moe_normalize_expert_weights = moe_normalize_expert_weights
        self.use_rms_norm = use_rms_norm
        self.parallel_block = parallel_block
        # The names transformers' helpers ask for.
        self.hidden_size = n_embd
        self.num_attention_heads = n_head
        self.num_hidden_layers = n_layer


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class NomicBertAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n_head = config.n_head
        self.head_dim = config.n_embd // config.n_head
        self.base = config.rotary_emb_base
        self.Wqkv = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.qkv_proj_bias)
        self.out_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.qkv_proj_bias)

    def forward(self, x, mask):
        b, s, _ = x.shape
        q, k, v = self.Wqkv(x).view(b, s, 3, self.n_head, self.head_dim).unbind(dim=2)
        inv_freq = 1.0 / (self.base ** (torch.arange(0, self.head_dim, 2, dtype=torch.float32) / self.head_dim))
        freqs = torch.outer(torch.arange(s, dtype=torch.float32), inv_freq)
        cos = torch.cat((freqs.cos(), freqs.cos()), dim=-1)[None, :, None, :]
        sin = torch.cat((freqs.sin(), freqs.sin()), dim=-1)[None, :, None, :]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / self.head_dim ** 0.5 + mask
        out = torch.einsum("bhqk,bkhd->bqhd", scores.softmax(dim=-1), v)
        return self.out_proj(out.reshape(b, s, -1))


class NomicBertMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.fc1 = nn.Linear(config.n_embd, config.n_inner, bias=config.mlp_fc1_bias)
        self.fc2 = nn.Linear(config.n_inner, config.n_embd, bias=config.mlp_fc2_bias)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class NomicRouter(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.moe_top_k = config.moe_top_k
        self.layer = nn.Linear(config.n_embd, config.num_experts, bias=False)

    def forward(self, x):
        weights = self.layer(x.view(-1, x.shape[-1])).softmax(dim=-1, dtype=torch.float32)
        top_weights, top_experts = torch.topk(weights, self.moe_top_k, dim=-1)
        return top_weights.to(x.dtype), top_experts


class NomicExpertMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.shape = (config.num_experts, config.n_inner, config.n_embd)
        self.w1 = nn.Parameter(torch.empty(config.num_experts * config.n_inner, config.n_embd))
        self.w2 = nn.Parameter(torch.empty(config.num_experts * config.n_inner, config.n_embd))

    def forward(self, x, expert):
        return F.gelu(x @ self.w1.view(*self.shape)[expert].t()) @ self.w2.view(*self.shape)[expert]


class NomicExperts(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_experts = config.num_experts
        self.mlp = NomicExpertMLP(config)
        self.bias = nn.Parameter(torch.zeros(config.n_embd))

    def forward(self, x, top_weights, top_experts):
        out = torch.zeros_like(x)
        for expert in range(self.num_experts):
            token, slot = torch.where(top_experts == expert)
            if token.numel() > 0:
                out.index_add_(0, token, self.mlp(x[token], expert) * top_weights[token, slot, None])
        return out + self.bias


class NomicMoELayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.router = NomicRouter(config)
        self.experts = NomicExperts(config)

    def forward(self, x):
        shape = x.shape
        flat = x.reshape(-1, shape[-1])
        top_weights, top_experts = self.router(flat)
        return self.experts(flat, top_weights, top_experts).view(shape)


class NomicBertBlock(nn.Module):
    def __init__(self, config, moe):
        super().__init__()
        self.attn = NomicBertAttention(config)
        self.mlp = NomicMoELayer(config) if moe else NomicBertMLP(config)
        self.norm1 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.norm2 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)

    def forward(self, x, mask):
        x = self.norm1(self.attn(x, mask) + x)
        return self.norm2(self.mlp(x) + x)


class NomicBertEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        every = config.moe_every_n_layers or 0
        self.layers = nn.ModuleList(
            NomicBertBlock(config, every > 0 and i % every == 1) for i in range(config.n_layer))

    def forward(self, x, mask):
        for layer in self.layers:
            x = layer(x, mask)
        return x


class NomicBertEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.n_embd, padding_idx=config.pad_token_id)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.n_embd)

    def forward(self, input_ids, token_type_ids):
        return self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)


class NomicBertPreTrainedModel(PreTrainedModel):
    config_class = NomicBertConfig
    base_model_prefix = "model"

    def _init_weights(self, module):
        pass


class NomicBertModel(NomicBertPreTrainedModel):
    def __init__(self, config, add_pooling_layer=False):
        super().__init__(config)
        self.embeddings = NomicBertEmbeddings(config)
        self.emb_ln = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.encoder = NomicBertEncoder(config)
        self.post_init()

    def get_input_embeddings(self):
        return self.embeddings.word_embeddings

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, return_dict=True, **kwargs):
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        mask = (1.0 - attention_mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        hidden_states = self.encoder(self.emb_ln(self.embeddings(input_ids, token_type_ids)), mask)
        return BaseModelOutputWithPooling(last_hidden_state=hidden_states)
