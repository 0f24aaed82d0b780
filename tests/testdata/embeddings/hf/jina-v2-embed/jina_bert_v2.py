# JinaBERT v2 (jina-embeddings-v2-base-en's `JinaBertModel`) as remote code for the
# `jina-v2-embed` fixture (tests/testdata/embeddings/README.md; make_embeddings.py loads it from here).
#
# Written for aprkit's tests after jinaai/jina-bert-implementation's modeling_bert.py
# (Apache-2.0), which jina-embeddings-v2 loads with trust_remote_code and which is not
# reachable where the fixtures are made: the same config fields, module tree and tensor
# names (`mlp.gated_layers`, `mlp.wo`, `mlp.layernorm`, no position embeddings) and the
# same computation for the configuration jina-embeddings-v2-base-en uses
# (position_embedding_type "alibi", feed_forward_type "geglu", no Q/K LayerNorms):
#
# - embeddings: word + token type, LayerNorm (ALiBi: no position embeddings);
# - attention: BERT's, its scores biased by ALiBi's symmetric -m_h·|i − j|, m_h the
#   paper's slopes (2^(-8h/n) for n a power of two), then dense + LayerNorm(x + residual);
# - feed-forward: `gated_layers` (no bias) to 2 × intermediate_size, GELU (erf) of the
#   first half times the second, `wo`, then `layernorm` of that plus its input.
#
# Only the forward pass a sentence embedder runs is kept (no decoder, cache, heads).

import math

import torch
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import BaseModelOutputWithPooling


class JinaBertConfig(PretrainedConfig):
    model_type = "bert"

    def __init__(self, vocab_size=30528, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                 intermediate_size=3072, hidden_act="gelu", hidden_dropout_prob=0.1,
                 attention_probs_dropout_prob=0.0, max_position_embeddings=8192, type_vocab_size=2,
                 initializer_range=0.02, layer_norm_eps=1e-12, pad_token_id=0, position_embedding_type="alibi",
                 use_cache=True, classifier_dropout=None, feed_forward_type="geglu", emb_pooler=None,
                 attn_implementation="torch", **kwargs):
        super().__init__(pad_token_id=pad_token_id, **kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.hidden_act = hidden_act
        self.intermediate_size = intermediate_size
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        self.position_embedding_type = position_embedding_type
        self.use_cache = use_cache
        self.classifier_dropout = classifier_dropout
        self.feed_forward_type = feed_forward_type
        self.emb_pooler = emb_pooler
        self.attn_implementation = attn_implementation


def alibi_slopes(n_heads):
    """ALiBi's head slopes (Press et al.), as jina-bert-implementation computes them."""
    def power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start ** i for i in range(n)]

    if math.log2(n_heads).is_integer():
        return power_of_2(n_heads)
    closest = 2 ** math.floor(math.log2(n_heads))
    return power_of_2(closest) + alibi_slopes(2 * closest)[0::2][: n_heads - closest]


class JinaBertEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids, token_type_ids):
        embeddings = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        return self.dropout(self.LayerNorm(embeddings))


class JinaBertSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = config.hidden_size // config.num_attention_heads
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)

    def heads(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.num_attention_heads, self.attention_head_size).permute(0, 2, 1, 3)

    def forward(self, hidden_states, bias):
        q, k, v = (self.heads(f(hidden_states)) for f in (self.query, self.key, self.value))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.attention_head_size)
        probs = self.dropout(nn.functional.softmax(scores + bias, dim=-1))
        context = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        return context.view(context.shape[0], context.shape[1], -1)


class JinaBertSelfOutput(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states, input_tensor):
        return self.LayerNorm(self.dropout(self.dense(hidden_states)) + input_tensor)


class JinaBertAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self = JinaBertSelfAttention(config)
        self.output = JinaBertSelfOutput(config)

    def forward(self, hidden_states, bias):
        return self.output(self.self(hidden_states, bias), hidden_states)


class JinaBertGLUMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.gated_layers = nn.Linear(config.hidden_size, config.intermediate_size * 2, bias=False)
        self.act = nn.GELU() if config.feed_forward_type == "geglu" else nn.ReLU()
        self.wo = nn.Linear(config.intermediate_size, config.hidden_size)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.layernorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, hidden_states):
        residual_connection = hidden_states
        hidden_states = self.gated_layers(hidden_states)
        gated = hidden_states[:, :, : self.config.intermediate_size]
        non_gated = hidden_states[:, :, self.config.intermediate_size:]
        hidden_states = self.dropout(self.act(gated) * non_gated)
        return self.layernorm(self.wo(hidden_states) + residual_connection)


class JinaBertLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attention = JinaBertAttention(config)
        self.mlp = JinaBertGLUMLP(config)

    def forward(self, hidden_states, bias):
        return self.mlp(self.attention(hidden_states, bias))


class JinaBertEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_attention_heads = config.num_attention_heads
        self.layer = nn.ModuleList([JinaBertLayer(config) for _ in range(config.num_hidden_layers)])

    def alibi(self, size, device):
        position = torch.arange(size, device=device)
        distance = torch.abs(position[None, :] - position[:, None])
        slopes = torch.tensor(alibi_slopes(self.num_attention_heads), device=device) * -1
        return (slopes[:, None, None] * distance[None, :, :]).unsqueeze(0)

    def forward(self, hidden_states, attention_mask):
        mask = (1.0 - attention_mask[:, None, None, :].to(hidden_states.dtype)) * torch.finfo(hidden_states.dtype).min
        bias = mask + self.alibi(hidden_states.shape[1], hidden_states.device).to(hidden_states.dtype)
        for layer in self.layer:
            hidden_states = layer(hidden_states, bias)
        return hidden_states


class JinaBertPooler(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.activation = nn.Tanh()

    def forward(self, hidden_states):
        return self.activation(self.dense(hidden_states[:, 0]))


class JinaBertPreTrainedModel(PreTrainedModel):
    config_class = JinaBertConfig
    base_model_prefix = "bert"

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            module.weight.data.normal_(0.0, self.config.initializer_range)
        if isinstance(module, nn.Linear) and module.bias is not None:
            module.bias.data.zero_()
        if isinstance(module, nn.LayerNorm):
            module.weight.data.fill_(1.0)
            module.bias.data.zero_()


class JinaBertModel(JinaBertPreTrainedModel):
    def __init__(self, config, add_pooling_layer=True):
        super().__init__(config)
        self.embeddings = JinaBertEmbeddings(config)
        self.encoder = JinaBertEncoder(config)
        self.pooler = JinaBertPooler(config) if add_pooling_layer else None
        self.post_init()

    def get_input_embeddings(self):
        return self.embeddings.word_embeddings

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, return_dict=True, **kwargs):
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        hidden_states = self.encoder(self.embeddings(input_ids, token_type_ids), attention_mask)
        pooled = self.pooler(hidden_states) if self.pooler is not None else None
        return BaseModelOutputWithPooling(last_hidden_state=hidden_states, pooler_output=pooled)
