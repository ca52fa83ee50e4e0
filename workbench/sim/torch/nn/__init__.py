from torch.nn.modules.module import Module, ModuleList, Parameter

__all__ = ["Module", "ModuleList", "Parameter"]
