"""The aclnn header CANN's build generates from an op_host OpDef, written here for tests.

CANN's op build (asc-devkit tools/build/opbuild/op_aclnn_generator.cpp) writes
``aclnn_<snake_case op>.h`` into the package's ``op_api/include``; MindSpore reads the
parameter types of ``aclnn<Op>GetWorkspaceSize`` from it (CustomInfoGenerator) and our
Ascend PyNative module is compiled against it. The rules reproduced (from that generator):

* parameters: inputs in OpDef order, then attributes, then outputs, then
  ``uint64_t *workspaceSize, aclOpExecutor **executor``;
* names in lower camel case (``num_groups`` -> ``numGroups``); an optional input gets
  "Optional"; with several outputs each is ``<name>Out``, a single one is ``out``;
* tensors are ``const aclTensor *`` (``const aclTensorList *`` when dynamic); attributes
  Int -> ``int64_t``, Bool -> ``bool``, Float -> ``double``, Str -> ``char *``,
  ListInt/ListFloat/ListBool -> ``const aclIntArray/aclFloatArray/aclBoolArray *``;
* the file includes ``aclnn/acl_meta.h`` and declares the functions ``extern "C"``.

``parse_op_def`` reads the OpDef from the op_host source the way this project writes it
(``this->Input("x").ParamType(REQUIRED)...``, ``this->Attr("n").AttrType(REQUIRED).Int()``).
"""
import re
from pathlib import Path

ATTR_TYPES = {"Int": "int64_t", "Bool": "bool", "Float": "double", "String": "char *",
              "ListInt": "const aclIntArray *", "ListFloat": "const aclFloatArray *",
              "ListBool": "const aclBoolArray *"}


def parse_op_def(source):
    """{"op_type", "inputs": [(name, param_type)], "outputs": [...], "attrs": [(name, kind)]}."""
    return {
        "op_type": re.search(r"class (\w+) : public OpDef", source).group(1),
        "inputs": re.findall(r'this->Input\("(\w+)"\)\.ParamType\((\w+)\)', source),
        "outputs": re.findall(r'this->Output\("(\w+)"\)\.ParamType\((\w+)\)', source),
        "attrs": re.findall(r'this->Attr\("(\w+)"\)\.AttrType\(\w+\)\.(\w+)\(', source),
    }


def camel(name):
    head, *rest = name.split("_")
    return head[:1].lower() + head[1:] + "".join(part[:1].upper() + part[1:] for part in rest)


def snake_header_name(op_type):
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", "aclnn" + op_type)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower() + ".h"


def _tensor(param_type):
    return "const aclTensorList *" if param_type == "DYNAMIC" else "const aclTensor *"


def parameters(op):
    """[(C type, name)] of aclnn<Op>GetWorkspaceSize, in CANN's order."""
    params = [(_tensor(kind), camel(name) + ("Optional" if kind == "OPTIONAL" else "")) for name, kind in op["inputs"]]
    params += [(ATTR_TYPES[kind], camel(name)) for name, kind in op["attrs"]]
    if len(op["outputs"]) == 1:
        params.append((_tensor(op["outputs"][0][1]), "out"))
    else:
        params += [(_tensor(kind), camel(name) + "Out") for name, kind in op["outputs"]]
    return params + [("uint64_t *", "workspaceSize"), ("aclOpExecutor **", "executor")]


def generate(op):
    """The header text for ``op`` (a parse_op_def result)."""
    name = "aclnn" + op["op_type"]
    guard = snake_header_name(op["op_type"]).upper().replace(".", "_") + "_"
    params = ",\n".join(f"    {ctype}{'' if ctype.endswith('*') else ' '}{pname}" for ctype, pname in parameters(op))
    return (f"\n/* generated for a test the way CANN's op build writes it */\n\n#ifndef {guard}\n#define {guard}\n\n"
            f'#include "aclnn/acl_meta.h"\n\n#ifdef __cplusplus\nextern "C" {{\n#endif\n\n'
            f'__attribute__((visibility("default")))\naclnnStatus {name}GetWorkspaceSize(\n{params});\n\n'
            f'__attribute__((visibility("default")))\naclnnStatus {name}(\n    void *workspace,\n'
            f"    uint64_t workspaceSize,\n    aclOpExecutor *executor,\n    aclrtStream stream);\n\n"
            f"#ifdef __cplusplus\n}}\n#endif\n\n#endif\n")


def install(op, vendor_dir):
    """Writes the header where CANN's installer puts it (<vendor>/op_api/include); returns its path."""
    include = Path(vendor_dir) / "op_api" / "include"
    include.mkdir(parents=True, exist_ok=True)
    path = include / snake_header_name(op["op_type"])
    path.write_text(generate(op))
    return path
