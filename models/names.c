/* names.c — printable names of the model enums. */
#include "models/model.h"

const char *jm_family_name(enum jm_family f) {
    switch (f) {
    case JM_FAMILY_IJEPA: return "ijepa";
    case JM_FAMILY_VJEPA: return "vjepa";
    case JM_FAMILY_VJEPA2: return "vjepa2";
    case JM_FAMILY_VJEPA2_1: return "vjepa2_1";
    case JM_FAMILY_LEVJEPA: return "levjepa";
    case JM_FAMILY_HFVIT: return "hfvit";
    case JM_FAMILY_LEWM: return "lewm";
    }
    return "?";
}

const char *jm_act_name(enum jm_act a) {
    switch (a) {
    case JM_ACT_GELU_ERF: return "gelu_erf";
    case JM_ACT_GELU_TANH: return "gelu_tanh";
    case JM_ACT_SILU: return "silu";
    }
    return "?";
}
