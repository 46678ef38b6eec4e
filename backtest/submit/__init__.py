"""submit"""
