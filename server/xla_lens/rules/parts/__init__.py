"""Parts of rules too large for one module: each belongs to the rule that imports it (XLA103's
hand-rolled loss scaling, XLA401's step-closure timing, XLA106's device after the safe fixes,
XLA204's replica coordination, XLA205's FSDP idioms and DDP forward inputs, XLA405's k-bit
quantization). Only ``rules/xlaNNN_*.py`` are rules; nothing here is registered."""
